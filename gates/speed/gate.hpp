// The speed gate's verdicts: a comparison's decision from its interleaved run (with the speed of
// light's veto), and the run-wide Holm correction over every comparison of a run. Host-only: the
// runtime times, this decides.
#pragma once

#include <string>
#include <vector>

#include "core/report.hpp"
#include "gates/speed/interleave.hpp"
#include "gates/speed/speed_of_light.hpp"

namespace kgate::speed {

/// What a comparison's decision reads besides its interleaved run.
struct GateInputs {
  LightFloor light;              ///< the case's floor (no bytes: none, no speed-of-light check)
  bool flush_l2 = true;          ///< cold-cache timing: only then is the speed of light enforced
  double max_budget_factor = 0;  ///< as InterleaveOptions (for the no-decision note)
  int min_blocks = 0;            ///< as InterleaveOptions (for the no-decision note)
  std::string candidate;         ///< the candidate kernel's name
  std::string baseline;          ///< the baseline kernel's name, "eager" for the reference
};

/// Fills `cmp` from a finished run: its kept blocks' samples, medians, the estimate and its bounds
/// (as ratios), the p-value (p_adjusted too, until apply_holm), the speed-of-light fractions, and
/// the decision: invalid when a median is faster than the hardware allows (cold cache) or the run
/// was invalid, else the run's PASS / REGRESSION / INCONCLUSIVE. Notes (why no decision was
/// possible, why it is invalid) are appended to cmp.note, "; " between them.
void decide_comparison(const InterleaveResult& r, const GateInputs& in, SpeedComparison& cmp);

/// Holm-adjusts the p-values of every speed comparison of a run (those timed: not skipped,
/// invalid or unchanged); a regression whose adjusted p-value exceeds its alpha becomes
/// inconclusive, and a kernel left with no regression is no longer regressed.
void apply_holm(std::vector<KernelReport>& kernels);

}  // namespace kgate::speed
