// What a kernel's launch() makes the GPU run, as CUPTI's callbacks see it: each kernel launch with
// its code (the SASS digest of the function, runtime/cuda/cubin_digest.hpp), grid, block, dynamic
// shared memory, launch attributes (cluster dimensions among them) and argument bytes (device
// pointers as their offset into their allocation), and each memory copy or fill by name. Two
// kernels whose records are equal on a case run the same code the same way on it: kgate check
// --baseline-build uses this, beside the module's code digest, to call a kernel UNCHANGED.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kgate::cuda {

/// Subscribes kgate's one CUPTI callback subscriber (once per process): from then on every module
/// the driver loads is counted and its CUBIN's functions digested. False where it cannot (another
/// CUPTI client, a profiler, holds the subscription; no CUPTI); `why` says so.
bool watch_modules(std::string* why = nullptr);

/// Modules the driver loaded since watch_modules() subscribed.
int64_t modules_loaded();

/// One recorded sequence of launches.
struct LaunchRecord {
  /// False when the sequence could not be recorded in full (`why` says what): it proves nothing.
  bool known = false;
  std::string why;
  /// One line per kernel launch or memory operation, in the order they were made.
  std::vector<std::string> launches;
  /// A launched function whose name two loaded CUBINs hold with different code: which one ran is
  /// not known, so this record equals no other (`why` names it).
  bool ambiguous = false;
  /// SHA-256 of the lines (64 hex digits) when known.
  std::string digest;
};

/// Whether two records show the same launches; where not, `difference` says the first difference
/// (or why they cannot be compared).
bool same_launches(const LaunchRecord& a, const LaunchRecord& b, std::string* difference);

/// Records the launches this process makes (on any thread) from construction to stop().
class LaunchRecorder {
 public:
  LaunchRecorder();
  ~LaunchRecorder();
  LaunchRecorder(const LaunchRecorder&) = delete;
  LaunchRecorder& operator=(const LaunchRecorder&) = delete;
  /// Ends the recording and returns it (once).
  LaunchRecord stop();

 private:
  bool active_ = false;
  std::string why_not_;
};

}  // namespace kgate::cuda
