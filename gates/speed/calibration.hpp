// Statistics for calibrating the speed gate with A/A runs (a kernel timed against itself) and for
// power studies: binomial confidence intervals for a false-positive or detection rate, percentiles,
// the per-launch coefficient of variation, and the summary of a set of A/A comparisons (noise
// floor, smallest supported delta). Host-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gates/speed/decision.hpp"

namespace kgate::speed {

/// A two-sided confidence interval for a proportion, both ends in [0, 1].
struct ProportionInterval {
  double lower = 0;
  double upper = 1;
};

/// The standard normal quantile: x with P(Z <= x) = p, for p in (0, 1) (a usage Error otherwise).
/// Accurate to a few ulp: bisection on erfc, then one Newton step.
double normal_quantile(double p);

/// Binomial(n, p) upper tail P(X >= k) for any p in [0, 1]; 1 for k <= 0, 0 for k > n.
/// Sums the terms from k to n in log space: O(n - k), meant for n up to about 1e7.
double binomial_upper_tail(int64_t n, int64_t k, double p);

/// Wilson score interval for `successes` out of `trials` at two-sided level `confidence`: good
/// coverage for small samples and rates near 0 (e.g. 0 of 50 gives [0, 0.0713] at 95%).
/// Throws a usage Error unless 0 <= successes <= trials, trials >= 1 and confidence in (0, 1).
ProportionInterval wilson_interval(int64_t successes, int64_t trials, double confidence = 0.95);

/// Clopper-Pearson ("exact") interval: the set of rates p for which neither one-sided binomial
/// test rejects at (1 - confidence) / 2. Conservative: coverage is at least `confidence` for every
/// p (0 of 50 gives [0, 0.0711] at 95%). Same argument checks as wilson_interval.
ProportionInterval clopper_pearson_interval(int64_t successes, int64_t trials,
                                            double confidence = 0.95);

/// The q-quantile of x (q in [0, 1]) by linear interpolation between order statistics (the
/// "type 7" definition of R and numpy's default): x_(h) with h = (n - 1) q, interpolated.
/// +inf values are allowed (e.g. an unbounded confidence limit) and sort last; NaN for an empty
/// sample. Throws a usage Error for q outside [0, 1] and an internal Error for a NaN element.
double percentile(std::vector<double> x, double q);

/// Sample coefficient of variation, standard deviation (n - 1) / mean; 0 for fewer than two
/// values, NaN when the mean is 0.
double coefficient_of_variation(const std::vector<double>& x);

/// Per-block log ratios ln(median(b_block) / median(a_block)) from two sample vectors that hold
/// whole blocks back to back, `per_block` samples of each arm per block (the layout of a speed
/// comparison's raw samples: 2 x launches_per_arm per block). Throws an internal Error when the
/// sizes differ or are not a multiple of `per_block`, or a sample is not positive.
std::vector<double> block_log_ratios(const std::vector<double>& a, const std::vector<double>& b,
                                     size_t per_block);

/// One A/A comparison (baseline and candidate are the same kernel), as calibration sees it.
struct AaComparison {
  Decision decision = Decision::inconclusive;
  bool invalid = false;  ///< the measurement was unusable (e.g. too many throttled blocks)
  double log_ratio = 0;  ///< Hodges-Lehmann estimate of ln(time candidate / time baseline)
  double log_upper = 0;  ///< upper confidence bound on the median log ratio (+inf: no bound)
  double cv = 0;         ///< per-launch coefficient of variation of the samples
};

/// What a set of A/A comparisons says about the gate on this machine.
struct AaSummary {
  int64_t comparisons = 0;  ///< all comparisons
  int64_t valid = 0;        ///< comparisons that were not invalid: the denominator of the rate
  int64_t regressions = 0;  ///< false positives: an A/A comparison decided REGRESSION
  int64_t passes = 0;
  int64_t inconclusive = 0;
  int64_t invalid = 0;
  double confidence = 0.95;        ///< level of the intervals
  double quantile = 0.95;          ///< the quantile taken for noise_floor and delta_min
  double false_positive_rate = 0;  ///< regressions / valid; NaN when nothing was valid
  ProportionInterval fp_exact;     ///< Clopper-Pearson interval of the false-positive rate
  ProportionInterval fp_wilson;    ///< Wilson interval of the false-positive rate
  /// Noise floor: the `quantile` of |HL log ratio| across comparisons, as a relative effect
  /// exp(.) - 1. An A/A estimate this far from 1 is ordinary noise.
  double noise_floor = 0;
  /// Smallest supported delta: the `quantile` across comparisons of exp(upper - HL) - 1, the
  /// confidence interval's upper half-width as a relative effect. A run can only pass (upper
  /// bound below ln(1 + delta)) when delta exceeds it; +inf when some run had no upper bound.
  double delta_min = 0;
  double median_cv = 0;  ///< median per-launch coefficient of variation
};

/// Summarizes A/A comparisons. Invalid comparisons are counted but left out of every statistic.
/// Throws a usage Error unless confidence and quantile are in (0, 1).
AaSummary summarize_aa(const std::vector<AaComparison>& comparisons, double confidence = 0.95,
                       double quantile = 0.95);

}  // namespace kgate::speed
