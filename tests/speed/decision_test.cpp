// Unit tests of the speed gate's statistics (gates/speed/decision): the Binomial(n, 1/2) tail,
// order-statistic bounds and decisions, Hodges-Lehmann, and the multiplicity corrections, checked
// against values computed by hand or by brute force.
#include "gates/speed/decision.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace kgate::speed {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Exact P(Binomial(n, 1/2) >= k) from Pascal's triangle in 64-bit integers (n <= 62).
double exact_upper_tail(int n, int k) {
  std::vector<uint64_t> row{1};
  for (int i = 0; i < n; ++i) {
    std::vector<uint64_t> next(row.size() + 1, 0);
    for (size_t j = 0; j < row.size(); ++j) {
      next[j] += row[j];
      next[j + 1] += row[j];
    }
    row = next;
  }
  uint64_t sum = 0;
  for (int i = std::max(k, 0); i <= n; ++i) sum += row[i];
  return std::ldexp(static_cast<double>(sum), -n);
}

TEST(BinomialTail, HandComputedSmallN) {
  EXPECT_DOUBLE_EQ(binomial_half_upper_tail(1, 1), 0.5);
  EXPECT_DOUBLE_EQ(binomial_half_upper_tail(4, 3), 5.0 / 16);      // (4 + 1) / 16
  EXPECT_DOUBLE_EQ(binomial_half_upper_tail(5, 2), 26.0 / 32);     // 1 - (1 + 5) / 32
  EXPECT_DOUBLE_EQ(binomial_half_upper_tail(10, 8), 56.0 / 1024);  // (45 + 10 + 1) / 1024
  EXPECT_DOUBLE_EQ(binomial_half_upper_tail(10, 5),
                   638.0 / 1024);  // (252 + 210 + 120 + 45 + 10 + 1)
  // C(20,15..20) = 15504 + 4845 + 1140 + 190 + 20 + 1 = 21700.
  EXPECT_DOUBLE_EQ(binomial_half_upper_tail(20, 15), 21700.0 / 1048576);
  EXPECT_DOUBLE_EQ(binomial_half_upper_tail(30, 30), std::ldexp(1.0, -30));
}

TEST(BinomialTail, EdgesAndRange) {
  EXPECT_EQ(binomial_half_upper_tail(0, 0), 1.0);
  EXPECT_EQ(binomial_half_upper_tail(0, 1), 0.0);
  EXPECT_EQ(binomial_half_upper_tail(7, -3), 1.0);
  EXPECT_EQ(binomial_half_upper_tail(7, 8), 0.0);
  EXPECT_THROW(binomial_half_upper_tail(-1, 0), Error);
}

TEST(BinomialTail, MatchesExactIntegersUpTo62) {
  for (int n = 1; n <= 62; ++n) {
    for (int k = 0; k <= n + 1; ++k) {
      const double exact = exact_upper_tail(n, k);
      if (n <= 60) {  // summed in integers: exact up to the final rounding
        EXPECT_DOUBLE_EQ(binomial_half_upper_tail(n, k), exact) << "n=" << n << " k=" << k;
      } else {
        EXPECT_NEAR(binomial_half_upper_tail(n, k), exact, 1e-13 * exact)
            << "n=" << n << " k=" << k;
      }
    }
  }
}

TEST(BinomialTail, MatchesHighPrecisionReferences) {
  // References summed exactly in 50-digit arithmetic (mpmath); n > 60 uses the saddle-point path.
  struct Reference {
    int64_t n, k;
    double tail;
  };
  const Reference references[] = {
      {61, 40, 0.010207356899817448745},      {100, 50, 0.53979461869358938075},
      {100, 65, 0.0017588208614850791028},    {101, 51, 0.5},
      {257, 150, 0.0043335203778537337706},   {1000, 530, 0.031011597549181590279},
      {1000, 600, 1.3642320780330092128e-10}, {10000, 5100, 0.02329276385247369439},
      {10000, 4950, 0.84375239524466042878},
  };
  for (const Reference& r : references) {
    EXPECT_NEAR(binomial_half_upper_tail(r.n, r.k) / r.tail, 1.0, 1e-13)
        << "n=" << r.n << " k=" << r.k;
  }
}

TEST(BinomialTail, LargeNIsStableAndSymmetric) {
  const int64_t n = 1000000;
  // P(X >= n/2) = 1/2 + pmf(n/2)/2, pmf(n/2) = C(n, n/2) 2^-n ~ sqrt(2/(pi n)) (1 - 1/(4n)).
  const double pi = 3.14159265358979323846;
  const double pmf_mode = std::sqrt(2.0 / (pi * n)) * (1 - 1.0 / (4.0 * n));
  EXPECT_NEAR(binomial_half_upper_tail(n, n / 2), 0.5 + pmf_mode / 2, 1e-12);
  // Symmetry: P(X >= k) + P(X >= n - k + 1) = 1; a deep tail stays positive and tiny.
  for (int64_t k : {n / 2 - 3000, n / 2 - 7, n / 2 + 1, n / 2 + 500, n / 2 + 2500}) {
    EXPECT_NEAR(binomial_half_upper_tail(n, k) + binomial_half_upper_tail(n, n - k + 1), 1.0,
                1e-12);
  }
  // 10 standard deviations out; reference summed in 40-digit arithmetic (mpmath).
  const double deep = binomial_half_upper_tail(n, n / 2 + 5000);
  EXPECT_NEAR(deep / 7.6907775219536759468e-24, 1.0, 1e-10);
}

TEST(Median, OddEvenEmpty) {
  EXPECT_EQ(median({}), 0.0);
  EXPECT_EQ(median({3, 1, 2}), 2.0);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
}

TEST(HodgesLehmann, HandComputed) {
  EXPECT_EQ(hodges_lehmann({}), 0.0);
  EXPECT_EQ(hodges_lehmann({5}), 5.0);
  // Walsh averages of {1,2,3}: 1, 1.5, 2, 2, 2.5, 3 -> median 2.
  EXPECT_EQ(hodges_lehmann({3, 1, 2}), 2.0);
  // {0,0,10}: 0, 0, 0, 5, 5, 10 -> (0 + 5) / 2.
  EXPECT_EQ(hodges_lehmann({0, 10, 0}), 2.5);
  // {1,2,4,8}: 1, 1.5, 2, 2.5, 3, 4, 4.5, 5, 6, 8 -> (3 + 4) / 2.
  EXPECT_EQ(hodges_lehmann({8, 1, 4, 2}), 3.5);
  // Robust to one wild value, unlike the mean.
  EXPECT_NEAR(hodges_lehmann({0.01, 0.02, 0.03, 0.02, 0.01, 5.0}), 0.02, 1e-12);
}

TEST(HodgesLehmann, MatchesBruteForceOnRandomSamples) {
  Rng rng(20240611);
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 1 + static_cast<int>(rng.uniform_int(0, 300));
    std::vector<double> d(n);
    for (double& x : d) {
      // Mix of continuous values, ties (coarse grid) and large / negative magnitudes.
      x = trial % 3 == 0 ? std::round(rng.uniform() * 8) - 4 : (rng.uniform() - 0.3) * 1e3;
    }
    std::vector<double> walsh;
    for (int i = 0; i < n; ++i) {
      for (int j = i; j < n; ++j) walsh.push_back(0.5 * d[i] + 0.5 * d[j]);
    }
    EXPECT_DOUBLE_EQ(hodges_lehmann(d), median(walsh)) << "trial " << trial << " n=" << n;
  }
}

TEST(HodgesLehmann, LargeSampleIsFastAndCentered) {
  Rng rng(7);
  std::vector<double> d(200000);
  for (double& x : d) x = 0.05 + (rng.uniform() - 0.5) * 0.01;  // symmetric around 0.05
  EXPECT_NEAR(hodges_lehmann(d), 0.05, 1e-4);
}

TEST(Decide, OrderStatisticBoundsHandComputed) {
  // n = 10, alpha = 0.05: P(X <= 1) = 11/1024 <= 0.05 < P(X <= 2) = 56/1024, so k = 2:
  // lower = d_(2), upper = d_(9).
  const std::vector<double> d{0.07, 0.02, 0.10, 0.05, 0.01, 0.09, 0.03, 0.08, 0.04, 0.06};
  const DecisionResult r = decide(d, 0.02, 0.05);
  EXPECT_EQ(r.n, 10);
  EXPECT_DOUBLE_EQ(r.lower, 0.02);
  EXPECT_DOUBLE_EQ(r.upper, 0.09);
  EXPECT_DOUBLE_EQ(r.median, 0.055);
  // At alpha = 0.06 the rank becomes 3 (56/1024 = 0.0547 <= 0.06).
  const DecisionResult wider = decide(d, 0.02, 0.06);
  EXPECT_DOUBLE_EQ(wider.lower, 0.03);
  EXPECT_DOUBLE_EQ(wider.upper, 0.08);
}

TEST(Decide, RegressionPassInconclusive) {
  const double thr = log_threshold(0.02);
  EXPECT_DOUBLE_EQ(thr, std::log1p(0.02));
  EXPECT_NEAR(thr, std::log(1.02), 1e-16);
  std::vector<double> slow, fast, mixed;
  for (int i = 0; i < 20; ++i) {
    slow.push_back(0.05 + 0.001 * i);   // 5% slower: every block above ln(1.02)
    fast.push_back(-0.01 + 0.001 * i);  // at most 0.9%: every block below ln(1.02)
    mixed.push_back(thr + (i % 2 ? 0.01 : -0.01));
  }
  const DecisionResult r_slow = decide(slow, 0.02, 0.05);
  EXPECT_EQ(r_slow.decision, Decision::regression);
  EXPECT_GT(r_slow.lower, thr);
  EXPECT_DOUBLE_EQ(r_slow.p_regression, std::ldexp(1.0, -20));
  EXPECT_DOUBLE_EQ(r_slow.p_pass, 1.0);
  const DecisionResult r_fast = decide(fast, 0.02, 0.05);
  EXPECT_EQ(r_fast.decision, Decision::pass);
  EXPECT_LT(r_fast.upper, thr);
  EXPECT_DOUBLE_EQ(r_fast.p_pass, std::ldexp(1.0, -20));
  const DecisionResult r_mixed = decide(mixed, 0.02, 0.05);
  EXPECT_EQ(r_mixed.decision, Decision::inconclusive);
  EXPECT_LE(r_mixed.lower, thr);
  EXPECT_GE(r_mixed.upper, thr);
  EXPECT_STREQ(decision_name(Decision::regression), "regression");
}

TEST(Decide, SignTestPValuesExcludeTies) {
  const double thr = log_threshold(0.02);
  // Two ties with the threshold are dropped: 3 above, 1 below of 4 untied.
  const DecisionResult r = decide({thr, 1.0, thr, 1.0, 1.0, -1.0}, 0.02, 0.05);
  EXPECT_DOUBLE_EQ(r.p_regression, 5.0 / 16);  // P(Binom(4) >= 3)
  EXPECT_DOUBLE_EQ(r.p_pass, 15.0 / 16);       // P(Binom(4) >= 1)
  const DecisionResult all_tied = decide({thr, thr, thr}, 0.02, 0.05);
  EXPECT_EQ(all_tied.p_regression, 1.0);
  EXPECT_EQ(all_tied.p_pass, 1.0);
}

TEST(Decide, TooFewBlocksIsInconclusive) {
  // n = 4: even all four blocks on one side has probability 1/16 > 0.05: no bound exists.
  const DecisionResult r = decide({1.0, 2.0, 3.0, 4.0}, 0.02, 0.05);
  EXPECT_EQ(r.lower, -kInf);
  EXPECT_EQ(r.upper, kInf);
  EXPECT_EQ(r.decision, Decision::inconclusive);
  // n = 5 at alpha 0.05 has one (1/32): the minimum is the lower bound.
  const DecisionResult five = decide({1.0, 2.0, 3.0, 4.0, 5.0}, 0.02, 0.05);
  EXPECT_EQ(five.lower, 1.0);
  EXPECT_EQ(five.decision, Decision::regression);
  const DecisionResult none = decide({}, 0.02, 0.05);
  EXPECT_EQ(none.n, 0);
  EXPECT_EQ(none.decision, Decision::inconclusive);
}

TEST(Decide, RejectsBadInput) {
  EXPECT_THROW(decide({0.1, NAN, 0.2}, 0.02, 0.05), Error);
  EXPECT_THROW(decide({0.1}, 0.02, 0.0), Error);
  EXPECT_THROW(decide({0.1}, 0.02, 0.5), Error);
  EXPECT_THROW(decide({0.1}, -1.0, 0.05), Error);
}

TEST(StageAlpha, BonferroniSplit) {
  EXPECT_DOUBLE_EQ(stage_alpha(0.05, 0, 4), 0.0125);
  double total = 0;
  for (int s = 0; s < 4; ++s) total += stage_alpha(0.05, s, 4);
  EXPECT_NEAR(total, 0.05, 1e-15);
  EXPECT_DOUBLE_EQ(stage_alpha(0.05, 0, 1), 0.05);
  EXPECT_THROW(stage_alpha(0.05, 4, 4), Error);
}

TEST(Multiplicity, HolmHandComputed) {
  // Sorted: 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04 -> max 0.06).
  const std::vector<double> adj = holm_adjust({0.01, 0.04, 0.03, 0.005});
  const std::vector<double> want{0.03, 0.06, 0.06, 0.02};
  ASSERT_EQ(adj.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(adj[i], want[i], 1e-15) << i;
  // Capped at 1 and monotone: {0.6, 0.9} -> {min(1, 1.2), max(1, 0.9)}.
  EXPECT_EQ(holm_adjust({0.6, 0.9}), (std::vector<double>{1.0, 1.0}));
  const std::vector<double> b = holm_adjust({0.01, 0.02, 0.021});  // 0.03, 0.04, max(0.04, 0.021)
  EXPECT_NEAR(b[0], 0.03, 1e-15);
  EXPECT_NEAR(b[1], 0.04, 1e-15);
  EXPECT_NEAR(b[2], 0.04, 1e-15);
  EXPECT_TRUE(holm_adjust({}).empty());
}

TEST(Multiplicity, BenjaminiHochbergHandComputed) {
  // Ranks 1..4: 0.005*4/1 = 0.02, 0.01*4/2 = 0.02, 0.03*4/3 = 0.04, 0.04*4/4 = 0.04.
  const std::vector<double> adj = benjamini_hochberg_adjust({0.01, 0.04, 0.03, 0.005});
  const std::vector<double> want{0.02, 0.04, 0.04, 0.02};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(adj[i], want[i], 1e-15) << i;
  // Step-up monotonicity: 0.01*3 = 0.03 and 0.02*3/2 = 0.03 fall to the later 0.021.
  const std::vector<double> b = benjamini_hochberg_adjust({0.021, 0.01, 0.02});
  for (double x : b) EXPECT_NEAR(x, 0.021, 1e-15);
  EXPECT_EQ(benjamini_hochberg_adjust({0.9, 0.8}), (std::vector<double>{0.9, 0.9}));
  EXPECT_EQ(benjamini_hochberg_adjust({1.0}), (std::vector<double>{1.0}));
  EXPECT_THROW(benjamini_hochberg_adjust({1.5}), Error);
}

}  // namespace
}  // namespace kgate::speed

namespace kgate::speed {
namespace {

// n evenly spaced log ratios centred on `centre`, `spread` wide: a sample whose median and
// order-statistic bounds are known.
std::vector<double> grid(int64_t n, double centre, double spread) {
  std::vector<double> d;
  for (int64_t i = 0; i < n; ++i)
    d.push_back(centre - spread / 2 + spread * static_cast<double>(i) / static_cast<double>(n - 1));
  return d;
}

TEST(BlocksToDecide, EstimatesTheBlocksThatDecideASampleLikeThisOne) {
  const double delta = 0.02, alpha = 0.01, t = std::log1p(delta);
  // 30 blocks 0.5% above the threshold, 10% wide: undecided.
  const DecisionResult first = decide(grid(30, t + 0.005, 0.10), delta, alpha);
  ASSERT_EQ(first.decision, Decision::inconclusive);
  const int64_t need = blocks_to_decide(first, delta);
  ASSERT_GT(need, 30);
  // The same distribution with that many blocks (and a margin) decides it; with half as many not.
  EXPECT_EQ(decide(grid(need * 13 / 10, t + 0.005, 0.10), delta, alpha).decision,
            Decision::regression)
      << need;
  EXPECT_EQ(decide(grid(need / 2, t + 0.005, 0.10), delta, alpha).decision, Decision::inconclusive)
      << need;
  // Below the threshold, it decides a pass the same way.
  const DecisionResult below = decide(grid(30, t - 0.005, 0.10), delta, alpha);
  const int64_t need_pass = blocks_to_decide(below, delta);
  EXPECT_EQ(decide(grid(need_pass * 13 / 10, t - 0.005, 0.10), delta, alpha).decision,
            Decision::pass)
      << need_pass;
}

TEST(BlocksToDecide, DecidedIsZeroAndAMedianOnTheThresholdIsNone) {
  const double delta = 0.02, alpha = 0.01, t = std::log1p(delta);
  EXPECT_EQ(blocks_to_decide(decide(grid(60, t + 0.2, 0.01), delta, alpha), delta), 0);
  EXPECT_EQ(blocks_to_decide(decide(grid(31, t, 0.10), delta, alpha), delta), -1);
  EXPECT_EQ(blocks_to_decide(decide(grid(3, t + 0.01, 0.10), delta, alpha), delta),
            -1);  // no bounds
}

}  // namespace
}  // namespace kgate::speed
