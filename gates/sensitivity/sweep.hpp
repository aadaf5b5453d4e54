// Tolerance sensitivity: how close to its tolerance a kernel's accuracy is, per kernel and dtype.
// From the errors of every case against the eager reference: the error distribution, the pass
// rate over a grid of absolute tolerances (atol x rtol, 1e-1 ... 1e-6) and over multiples of the
// configured tolerance (0.25x ... 4x), the frontier (per rtol, the smallest atol every case passes
// with), and the margin = worst observed / allowed error under the configured rule. A kernel that
// passes with a margin above the fragility threshold (default 0.8) is FRAGILE: its accuracy hangs
// by a thread. Host-only; the runner measures, this module summarizes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace kgate::sensitivity {

/// The tolerances a sweep evaluates.
struct SweepGrid {
  std::vector<double> atols = {1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6};
  std::vector<double> rtols = {1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6};
  /// Multiples of the configured tolerance (atol and rtol scaled together, or the ulp / ref_ratio
  /// bound): a case passes at scale s when its margin is <= s.
  std::vector<double> scales = {0.25, 0.5, 1, 2, 4};
};

/// What one case measured, as the sweep needs it.
struct CaseErrors {
  std::string case_id;
  /// The case fails whatever the tolerance: a memory check, the NaN/Inf pattern, a launch error.
  bool hard_failure = false;
  std::string hard_failure_rule;  ///< e.g. "memory", "nan_contract", "error"
  double margin = 0;              ///< observed / allowed error under the configured rule
  double max_abs = 0;             ///< vs the eager reference, over finite elements
  double max_rel = 0;
  /// Per SweepGrid::rtols entry: the smallest atol with which allclose against the eager reference
  /// passes, max over elements of (|out - ref| - rtol * |ref|), at least 0.
  std::vector<double> needed_atol;
};

/// Nearest-rank quantiles of one error measure over the cases.
struct Quantiles {
  double p50 = 0, p90 = 0, p99 = 0, max = 0;
};
Quantiles quantiles(std::vector<double> values);

/// The sweep of one kernel and dtype.
struct DtypeSweep {
  DType dtype = DType::f32;
  std::string rule;                    ///< the configured rule: allclose, ulp or ref_ratio
  double atol = 0, rtol = 0;           ///< the configured allclose tolerance (for the report)
  int64_t cases = 0;                   ///< cases judged (fallback cases are left out)
  int64_t failed = 0;                  ///< cases failing the configured tolerance
  int64_t hard_failures = 0;           ///< of those, failures no tolerance can pass
  Quantiles max_abs, max_rel, margin;  ///< margin over the cases without a hard failure
  double worst_margin = 0;             ///< the largest margin (inf when a case has a hard failure)
  /// pass_rate[r][a]: the fraction of cases passing allclose with rtols[r], atols[a].
  std::vector<std::vector<double>> pass_rate;
  /// Per rtol: the smallest atol with which every case passes (inf: none, a hard failure).
  std::vector<double> frontier_atol;
  /// Per scale: the fraction of cases passing with the configured tolerance times that scale.
  std::vector<double> scale_pass_rate;
  bool fragile = false;  ///< every case passes, and worst_margin > the threshold
  std::string verdict;   ///< "ok", "FRAGILE" or "FAILED"
};

/// Summarizes the cases of one kernel and dtype. `needed_atol` of each case must have one entry per
/// grid rtol (a case without them counts only in the margin-based figures). `fragile_margin` in
/// (0, 1]: the margin above which a passing kernel is FRAGILE.
DtypeSweep summarize(DType dtype, const std::vector<CaseErrors>& cases, const SweepGrid& grid,
                     double fragile_margin);

}  // namespace kgate::sensitivity
