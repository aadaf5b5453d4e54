// The CUDA device as kgate sees it: is there one, what is it, and NVML clock/throttle readings
// (NVML is loaded with dlopen; its absence means "no clock data", never a crash).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kgate::cuda {

/// True when the runtime sees at least one device; otherwise `why` says what is missing.
bool device_available(std::string* why = nullptr);

struct DeviceInfo {
  std::string name;
  std::string driver;   ///< e.g. "13.0"
  std::string runtime;  ///< e.g. "13.0"
  int sm_major = 0;
  int sm_minor = 0;
  int multiprocessors = 0;
  int64_t l2_bytes = 0;
};
DeviceInfo device_info(int device = 0);

/// One NVML reading of the device's SM clock, temperature and throttle reasons.
struct ClockSample {
  unsigned sm_clock_mhz = 0;
  unsigned temperature_c = 0;
  uint64_t throttle_reasons = 0;  ///< nvmlClocksEventReasons bit mask
  /// Throttle reasons that disturb a timing (power cap, thermal, sync boost excluded: idle is fine).
  bool throttled() const;
  std::string describe() const;
};

/// NVML, when present. `sample()` returns nullopt when NVML is missing or fails.
class Nvml {
 public:
  Nvml();
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  bool available() const { return device_ != nullptr; }
  std::string unavailable_reason() const { return reason_; }
  std::optional<ClockSample> sample() const;

 private:
  void* lib_ = nullptr;
  void* device_ = nullptr;
  std::string reason_;
};

}  // namespace kgate::cuda
