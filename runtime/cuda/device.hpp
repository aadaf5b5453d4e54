// The CUDA device as kgate sees it: is there one, what is it, and NVML clock/throttle readings
// (NVML is loaded with dlopen; its absence means "no clock data", never a crash).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kgate::cuda {

/// True when the runtime sees at least one device; otherwise `why` says what is missing.
bool device_available(std::string* why = nullptr);

/// True in a process that kgate check --sanitize runs under compute-sanitizer
/// (KGATE_UNDER_SANITIZER=1): kgate makes no CUDA call there that it expects to fail (the tool
/// would count it as the kernel's error) and leaves CUPTI to the tool.
bool under_sanitizer();

/// The CUDA_VISIBLE_DEVICES value that leaves only device `ordinal` (as this process numbers the
/// devices: the `ordinal`-th entry of `visible`, the current CUDA_VISIBLE_DEVICES, when it is set;
/// else `ordinal` itself). Throws Error(usage) for a negative ordinal or one past the list.
std::string visible_devices_for(int ordinal, const char* visible);

/// Makes device `ordinal` the only one this process and its workers see (as device 0), by setting
/// CUDA_VISIBLE_DEVICES; must run before CUDA starts. Remembers the ordinal and the former list in
/// KGATE_DEVICE (reports name them). Throws Error(usage) as visible_devices_for.
void select_device(int ordinal);

/// CUDA devices this process sees (after CUDA_VISIBLE_DEVICES); 0 without a driver. Starts no
/// context.
int device_count();

/// Waits for the current device's work (cudaDeviceSynchronize), errors ignored: a fault surfaces
/// where a check looks for it (kgate check --cost's phase boundaries).
void synchronize_quietly();

/// The GPU CTest assigned this process (CTEST_RESOURCE_GROUP_0_GPUS = "id:1,slots:1" for a test
/// that declares RESOURCE_GROUPS gpus:1 under a resource spec whose ids are device ordinals), or
/// nullopt outside such a test.
std::optional<int> ctest_assigned_gpu();

struct DeviceInfo {
  std::string name;
  std::string uuid;      ///< "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi -L prints it
  std::string selected;  ///< "device 1 (of CUDA_VISIBLE_DEVICES=0,1)" after select_device; else ""
  std::string driver;    ///< e.g. "13.0"
  std::string runtime;   ///< e.g. "13.0"
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
  /// Throttle reasons that disturb a timing (power cap, thermal, sync boost excluded: idle is
  /// fine).
  bool throttled() const;
  std::string describe() const;
};

/// A process holding a context on the GPU, as NVML lists it.
struct GpuProcess {
  unsigned pid = 0;
  uint64_t used_bytes = 0;  ///< its GPU memory (NVML may not know: then a huge sentinel)
};

/// NVML, when present, for the current CUDA device, found by its UUID (NVML numbers devices its own
/// way, ignoring CUDA_VISIBLE_DEVICES). `sample()` returns nullopt when NVML is missing or fails.
class Nvml {
 public:
  Nvml();
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  bool available() const { return device_ != nullptr; }
  std::string unavailable_reason() const { return reason_; }
  std::optional<ClockSample> sample() const;
  /// Compute processes on the device other than this one and `siblings` (this run's other
  /// workers, idle while this one times: kgate check --jobs); nullopt when NVML cannot tell.
  std::optional<std::vector<GpuProcess>> other_processes(
      const std::vector<int>& siblings = {}) const;

 private:
  void* device_ = nullptr;
  std::string reason_;
};

/// Why the GPU with this UUID looks unusable to NVML, asked without a CUDA context (a parent
/// process that deals kernels to GPUs has none): NVML says the GPU is lost, or it counts more
/// uncorrected ECC errors than `*ecc_baseline` (the first call with ULLONG_MAX there records the
/// count). "" when it looks usable, or when NVML is absent or cannot tell; `*found` (when given):
/// NVML found the GPU by that UUID.
std::string nvml_device_trouble(const std::string& uuid, unsigned long long* ecc_baseline,
                                bool* found = nullptr);

}  // namespace kgate::cuda
