// `kgate check --sanitize TOOL`: a stated subset of each kernel's cases (the largest case of each
// family up to 2^20 elements, at most --sanitize-cases) runs again, each in its own worker under
// NVIDIA's compute-sanitizer (memcheck, racecheck, synccheck or initcheck). Its findings are
// reported per case; a case with errors fails the kernel (rule = the tool). Where compute-sanitizer
// is missing or refuses the device, the kernel says so (SKIPPED, with the reason) and keeps its
// verdict.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/case.hpp"

namespace kgate::cli {

/// The tools --sanitize accepts.
const std::vector<std::string>& sanitizer_tools();

/// compute-sanitizer's path: $KGATE_COMPUTE_SANITIZER, $CUDA_HOME/bin, /usr/local/cuda/bin, then
/// PATH. nullopt when there is none (`looked` then lists where it looked).
std::optional<std::string> find_compute_sanitizer(std::string* looked = nullptr);

/// What one compute-sanitizer run printed, read back.
struct SanitizerFindings {
  bool completed = false;  ///< its summary line was printed: the run was checked to the end
  int64_t errors = 0;      ///< errors (racecheck: hazards reported as errors)
  std::vector<std::string>
      first;           ///< the first lines of its first findings, without the "=========" prefix
  std::string reason;  ///< not completed: the last thing it said
};
SanitizerFindings parse_sanitizer_output(const std::string& text);

/// Cases --sanitize picks per family: the largest of at most this many elements.
inline constexpr int64_t kSanitizeElements = int64_t{1} << 20;

/// The cases --sanitize runs: per family (in the list's order, the huge family left out) its
/// largest case of at most kSanitizeElements elements, then the next cases of the list, `count`
/// in all.
std::vector<Case> sanitize_subset(const std::vector<Case>& cases, int64_t count);

}  // namespace kgate::cli
