// The outcome taxonomy of every verdict kgate gives.
#pragma once

#include <string>

namespace kgate {

enum class Outcome {
  passed,
  failed,        ///< incorrect output, or the kernel faulted / hung
  regressed,     ///< statistically significant slowdown beyond the minimum effect
  inconclusive,  ///< the measurement could not decide within its budget
  invalid,       ///< the measurement is unusable (e.g. too many throttled blocks)
  skipped,       ///< not run here (e.g. no GPU): never counted as a pass
  fragile,       ///< passes, but uses more of its error budget than the fragility threshold
  unchanged,  ///< candidate and baseline compile to byte-identical code: not timed, nothing changed
  /// No case ran the kernel (none applied, or every case fell outside its guard and the reference
  /// ran): nothing was shown, so never a pass; exit 3 whatever the policy.
  unchecked,
};

const char* outcome_name(Outcome outcome);
Outcome parse_outcome(const std::string& name);

}  // namespace kgate
