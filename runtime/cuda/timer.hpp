// Device-side timing of launches. CUPTI activity records give each launch's device time as the sum
// of the kernel records it produced, on any stream (matched through an external correlation id
// pushed around the launch; a kernel of the context that no thread's launch call started, such as
// one a kernel's helper thread launched, counts for the launch it ran under); CUDA events are the
// fallback. An optional L2 flush runs between launches, unmeasured.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gates/speed/checked_arms.hpp"

namespace kgate::cuda {

/// The timer interface is backend-neutral (gates/speed/checked_arms.hpp); CUPTI and events
/// implement it here.
using KernelSet = speed::KernelSet;
using LaunchTimer = speed::LaunchTimer;

/// Which CUPTI kernel records the timer reads.
enum class CuptiRecords {
  /// CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: kernels run as they would unprofiled (the default).
  concurrent,
  /// CUPTI_ACTIVITY_KIND_KERNEL: CUPTI serializes kernels, as a profiler does; kept to compare the
  /// two record kinds' timestamps with Nsight Compute's (bench/ncu_compare.sh).
  serialized,
};

/// CUPTI activity timer; throws a device Error if CUPTI cannot be enabled. It takes no stream: it
/// drains the whole device and counts a launch's kernels on every stream.
std::unique_ptr<LaunchTimer> make_cupti_timer(CuptiRecords records = CuptiRecords::concurrent);
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

/// Pairs of device elements to swap (checked timing's change of an input before a timed launch),
/// passed by value to the flush kernel so they cost no launch of their own.
struct ElementSwaps {
  static constexpr int kMax = 8;
  int count = 0;
  unsigned char* a[kMax] = {};
  unsigned char* b[kMax] = {};
  int size[kMax] = {};
};

/// A device buffer twice the L2 size; flush() runs over it on `stream` so the next launch starts
/// cold.
class L2Flusher {
 public:
  explicit L2Flusher(void* stream, FlushMode mode = FlushMode::read);
  ~L2Flusher();
  L2Flusher(const L2Flusher&) = delete;
  L2Flusher& operator=(const L2Flusher&) = delete;
  void flush();
  /// Swaps the `size`-byte elements at `a` and `b` at the next flush (read mode; at once when the
  /// queue is full or in write mode).
  void swap_at_flush(void* a, void* b, int size);

 private:
  void* stream_;
  FlushMode mode_;
  void* buffer_ = nullptr;
  int* sink_ = nullptr;
  size_t bytes_ = 0;
  int multiprocessors_ = 0;
  int value_ = 0;
  ElementSwaps swaps_;
};

/// The device's copy bandwidth, bytes read + written per second: the best of `launches` cold-cache
/// (flushed) copies of a buffer of max(256 MiB, 4 x L2) through a 16-byte streaming copy kernel,
/// timed by `timer`. Speed of light's ceiling: no correct kernel moves its floor's bytes much
/// faster than this.
double copy_bandwidth(void* stream, LaunchTimer& timer, L2Flusher& flusher, int launches = 8);

}  // namespace kgate::cuda
