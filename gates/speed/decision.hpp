// The statistical speed gate: distribution-free decisions on per-block log ratios
// d = ln(median_candidate / median_baseline), one-sided against a minimum effect delta.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kgate::speed {

enum class Decision {
  pass,          ///< the upper confidence bound on the median slowdown is below ln(1 + delta)
  regression,    ///< the lower confidence bound exceeds ln(1 + delta)
  inconclusive,  ///< neither, at this alpha and block count
};
const char* decision_name(Decision decision);

/// Result of a decision on a set of block log ratios.
struct DecisionResult {
  Decision decision = Decision::inconclusive;
  int64_t n = 0;              ///< blocks used
  double hodges_lehmann = 0;  ///< HL estimate of the median log ratio (Walsh averages)
  double median = 0;          ///< sample median of d
  double lower = 0;           ///< one-sided (1 - alpha) lower confidence bound on the median of d
  double upper = 0;           ///< one-sided (1 - alpha) upper confidence bound on the median of d
  double p_regression =
      1;              ///< sign-test p-value of H0: median(d) <= ln(1+delta) (small: regression)
  double p_pass = 1;  ///< sign-test p-value of H0: median(d) >= ln(1+delta) (small: pass)
};

/// The decision threshold on the log ratio, ln(1 + delta) (computed as log1p); throws a usage
/// Error unless delta is finite and > -1.
double log_threshold(double delta);

/// Order-statistic (sign-test) confidence bounds on the median of `d` at level alpha each side,
/// and the decision against threshold ln(1 + delta). Needs no distributional assumption.
/// With too few blocks for any bound at this alpha, the bounds are -inf / +inf (inconclusive).
/// The lower bound is d_(k), the upper d_(n+1-k), with k the largest rank such that
/// P(Binomial(n, 1/2) <= k - 1) <= alpha. alpha must be in (0, 0.5) (a usage Error otherwise),
/// and every d finite (an internal Error otherwise: drop such blocks first).
DecisionResult decide(std::vector<double> d, double delta, double alpha);

/// Hodges-Lehmann estimate of the location of d: the median of all Walsh averages (d_i + d_j) / 2,
/// i <= j; 0 for an empty sample. Exact for any n in O(n log n): the k-th Walsh average is found by
/// bisection over the ordered doubles, each step counting averages <= t in O(n) on the sorted
/// sample (at most 64 steps), so no n^2 list of averages is built and nothing is subsampled.
double hodges_lehmann(const std::vector<double>& d);

/// Binomial(n, 1/2) upper tail P(X >= k), computed stably for n up to 1e6.
double binomial_half_upper_tail(int64_t n, int64_t k);

/// Alpha spent at stage `stage` (0-based) of at most `stages` looks: a Bonferroni split of `alpha`,
/// so the chance of any false decision across all looks stays <= alpha.
double stage_alpha(double alpha, int stage, int stages);

/// For an inconclusive decision (its bounds straddle ln(1 + delta)): about how many blocks would
/// decide it, if the blocks to come are like those so far. The bounds' half-width shrinks as
/// 1/sqrt(n); the decision needs it below the distance from the estimate (Hodges-Lehmann, steadier
/// than the median on few blocks) to the threshold, so about
/// n x (half-width / distance)^2 blocks (at least n + 1). 0 when `d` is decided already; -1 when no
/// number of blocks would (the median on the threshold, or unbounded bounds).
int64_t blocks_to_decide(const DecisionResult& d, double delta);

/// The fewest blocks with which a comparison can reach a decision at all: its sign-test bound needs
/// 0.5^n <= alpha / stages (the first look's share), and a regression must survive the Holm
/// correction over `comparisons` in the run, 0.5^n * comparisons <= alpha. Fewer blocks can only
/// end inconclusive, however large the slowdown.
int min_blocks_to_decide(double alpha, int stages, int64_t comparisons);

/// Holm step-down adjusted p-values (same order as the input); controls the family-wise error rate.
std::vector<double> holm_adjust(const std::vector<double>& p);
/// Benjamini-Hochberg adjusted p-values (same order); controls the false discovery rate.
std::vector<double> benjamini_hochberg_adjust(const std::vector<double>& p);

/// Median of a sample (mean of the two middle values for even sizes); 0 for an empty sample.
double median(std::vector<double> x);

}  // namespace kgate::speed
