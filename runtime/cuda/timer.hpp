// Device-side timing of launches. CUPTI activity records give each launch's device time as the sum
// of the kernel records it produced (matched through an external correlation id pushed around the
// launch); CUDA events are the fallback. An optional L2 flush runs between launches, unmeasured.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kgate::cuda {

class LaunchTimer {
 public:
  virtual ~LaunchTimer() = default;
  /// Runs `launch` `count` times on `stream` (each launch may start several kernels) and returns
  /// each launch's device time in nanoseconds. `between` runs before each launch, unmeasured.
  virtual std::vector<double> time(const std::function<void()>& launch, int count,
                                   const std::function<void()>& between) = 0;
  /// "cupti", "cupti-serial" or "events".
  virtual const char* name() const = 0;
};

/// Which CUPTI kernel records the timer reads.
enum class CuptiRecords {
  /// CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: kernels run as they would unprofiled (the default).
  concurrent,
  /// CUPTI_ACTIVITY_KIND_KERNEL: CUPTI serializes kernels, as a profiler does; kept to compare the
  /// two record kinds' timestamps with Nsight Compute's (bench/ncu_compare.sh).
  serialized,
};

/// CUPTI activity timer; throws a device Error if CUPTI cannot be enabled.
std::unique_ptr<LaunchTimer> make_cupti_timer(void* stream, CuptiRecords records = CuptiRecords::concurrent);
/// CUDA events around each launch (overstates very short kernels).
std::unique_ptr<LaunchTimer> make_event_timer(void* stream);
/// CUPTI if it can be enabled, else events (`note` says why).
std::unique_ptr<LaunchTimer> make_best_timer(void* stream, std::string* note);

/// How L2Flusher empties the L2 of a launch's data.
enum class FlushMode {
  /// A kernel reads a buffer twice the L2 size: the L2 is left holding only clean lines of that
  /// buffer, as after Nsight Compute's cache flush, so the next launch pays no write-backs that are
  /// not its own (the default).
  read,
  /// cudaMemset over the buffer: the L2 is left full of dirty lines, whose write-back the next
  /// launch pays (measured on the H200: see bench/ncu_compare.sh).
  write,
};

/// A device buffer twice the L2 size; flush() runs over it on `stream` so the next launch starts cold.
class L2Flusher {
 public:
  explicit L2Flusher(void* stream, FlushMode mode = FlushMode::read);
  ~L2Flusher();
  L2Flusher(const L2Flusher&) = delete;
  L2Flusher& operator=(const L2Flusher&) = delete;
  void flush();

 private:
  void* stream_;
  FlushMode mode_;
  void* buffer_ = nullptr;
  int* sink_ = nullptr;
  size_t bytes_ = 0;
  int multiprocessors_ = 0;
  int value_ = 0;
};

}  // namespace kgate::cuda
