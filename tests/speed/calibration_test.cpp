// Unit tests of the calibration statistics (gates/speed/calibration): normal quantiles, binomial
// tails, Wilson and Clopper-Pearson intervals, percentiles, the coefficient of variation, block log
// ratios and the A/A summary. Reference values were computed to 20+ digits with mpmath
// (betainc / erfinv) or follow from closed forms noted next to them.
#include "gates/speed/calibration.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/error.hpp"

namespace kgate::speed {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(NormalQuantile, KnownValues) {
  EXPECT_NEAR(normal_quantile(0.5), 0.0, 1e-15);
  EXPECT_NEAR(normal_quantile(0.975), 1.9599639845400542, 1e-14);
  EXPECT_NEAR(normal_quantile(0.95), 1.6448536269514727, 1e-14);
  EXPECT_NEAR(normal_quantile(0.999), 3.0902323061678135, 1e-13);
  EXPECT_NEAR(normal_quantile(1e-10), -6.3613409024040562, 1e-12);
  EXPECT_NEAR(normal_quantile(0.025), -normal_quantile(0.975), 1e-15);
  EXPECT_THROW(normal_quantile(0), Error);
  EXPECT_THROW(normal_quantile(1), Error);
  EXPECT_THROW(normal_quantile(std::nan("")), Error);
}

TEST(BinomialUpperTail, KnownValuesAndEdges) {
  EXPECT_NEAR(binomial_upper_tail(10, 8, 0.3), 0.0015903864, 1e-14);  // exact: 15903864e-10
  EXPECT_NEAR(binomial_upper_tail(50, 5, 0.05), 0.10361681014414354, 1e-13);
  EXPECT_NEAR(binomial_upper_tail(10, 5, 0.5), 638.0 / 1024, 1e-14);
  EXPECT_DOUBLE_EQ(binomial_upper_tail(7, 7, 0.5), 1.0 / 128);
  EXPECT_EQ(binomial_upper_tail(7, 0, 0.2), 1.0);
  EXPECT_EQ(binomial_upper_tail(7, 8, 0.2), 0.0);
  EXPECT_EQ(binomial_upper_tail(7, 1, 0.0), 0.0);
  EXPECT_EQ(binomial_upper_tail(7, 7, 1.0), 1.0);
  EXPECT_THROW(binomial_upper_tail(-1, 0, 0.5), Error);
  EXPECT_THROW(binomial_upper_tail(5, 1, 1.5), Error);
}

TEST(WilsonInterval, KnownValues) {
  // 0 of n: [0, z^2 / (n + z^2)].
  auto w = wilson_interval(0, 50);
  EXPECT_EQ(w.lower, 0.0);
  EXPECT_NEAR(w.upper, 0.071347599133358704, 1e-12);
  w = wilson_interval(1, 50);
  EXPECT_NEAR(w.lower, 0.0035392592716462333, 1e-12);
  EXPECT_NEAR(w.upper, 0.10495443589637812, 1e-12);
  w = wilson_interval(5, 10);
  EXPECT_NEAR(w.lower, 0.23659309051256401, 1e-12);
  EXPECT_NEAR(w.upper, 0.76340690948743599, 1e-12);
  w = wilson_interval(50, 50);
  EXPECT_NEAR(w.lower, 0.9286524008666413, 1e-12);
  EXPECT_EQ(w.upper, 1.0);
}

TEST(ClopperPearsonInterval, KnownValues) {
  // 0 of n: upper = 1 - (alpha/2)^(1/n); n of n: lower = (alpha/2)^(1/n).
  auto cp = clopper_pearson_interval(0, 50);
  EXPECT_EQ(cp.lower, 0.0);
  EXPECT_NEAR(cp.upper, 1 - std::pow(0.025, 1.0 / 50), 1e-12);
  EXPECT_NEAR(cp.upper, 0.071121736464197645, 1e-12);
  cp = clopper_pearson_interval(50, 50);
  EXPECT_NEAR(cp.lower, std::pow(0.025, 1.0 / 50), 1e-12);
  EXPECT_EQ(cp.upper, 1.0);
  cp = clopper_pearson_interval(1, 50);
  EXPECT_NEAR(cp.lower, 0.00050622798304082952, 1e-12);
  EXPECT_NEAR(cp.upper, 0.1064695457114999, 1e-12);
  cp = clopper_pearson_interval(5, 10);
  EXPECT_NEAR(cp.lower, 0.18708602844739857, 1e-12);
  EXPECT_NEAR(cp.upper, 0.81291397155260143, 1e-12);
  cp = clopper_pearson_interval(3, 20);
  EXPECT_NEAR(cp.lower, 0.032070937185463717, 1e-12);
  EXPECT_NEAR(cp.upper, 0.3789268265453139, 1e-12);
  cp = clopper_pearson_interval(2, 150);
  EXPECT_NEAR(cp.lower, 0.001618827029839752, 1e-12);
  EXPECT_NEAR(cp.upper, 0.04733301949633556, 1e-12);
}

TEST(ClopperPearsonInterval, ContainsWilsonCenterAndIsSymmetric) {
  for (int n : {1, 7, 20, 51}) {
    for (int x = 0; x <= n; ++x) {
      const auto cp = clopper_pearson_interval(x, n, 0.9);
      const auto mirrored = clopper_pearson_interval(n - x, n, 0.9);
      EXPECT_NEAR(cp.lower, 1 - mirrored.upper, 1e-12) << x << " of " << n;
      EXPECT_LE(cp.lower, static_cast<double>(x) / n);
      EXPECT_GE(cp.upper, static_cast<double>(x) / n);
    }
  }
}

TEST(ProportionIntervals, RejectBadArguments) {
  EXPECT_THROW(wilson_interval(0, 0), Error);
  EXPECT_THROW(wilson_interval(3, 2), Error);
  EXPECT_THROW(clopper_pearson_interval(-1, 2), Error);
  EXPECT_THROW(clopper_pearson_interval(1, 2, 1.0), Error);
}

TEST(Percentile, Type7Interpolation) {
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 1.0), 4.0);
  std::vector<double> one_to_twenty;
  for (int i = 1; i <= 20; ++i) one_to_twenty.push_back(i);
  EXPECT_NEAR(percentile(one_to_twenty, 0.95), 19.05, 1e-12);  // 1 + 0.95 * 19
  EXPECT_NEAR(percentile(one_to_twenty, 0.25), 5.75, 1e-12);   // 1 + 0.25 * 19
  EXPECT_DOUBLE_EQ(percentile({7}, 0.3), 7.0);
  EXPECT_TRUE(std::isnan(percentile({}, 0.5)));
}

TEST(Percentile, InfinityAndErrors) {
  EXPECT_EQ(percentile({1, 2, kInf}, 0.9), kInf);
  EXPECT_DOUBLE_EQ(percentile({1, 2, kInf}, 0.5), 2.0);
  EXPECT_EQ(percentile({kInf, kInf}, 0.5), kInf);
  EXPECT_THROW(percentile({1, 2}, 1.5), Error);
  EXPECT_THROW(percentile({1, std::nan("")}, 0.5), Error);
}

TEST(CoefficientOfVariation, KnownValues) {
  // mean 3, sample sd sqrt(2.5).
  EXPECT_NEAR(coefficient_of_variation({1, 2, 3, 4, 5}), std::sqrt(2.5) / 3, 1e-15);
  EXPECT_EQ(coefficient_of_variation({5, 5, 5}), 0.0);
  EXPECT_EQ(coefficient_of_variation({5}), 0.0);
  EXPECT_TRUE(std::isnan(coefficient_of_variation({-1, 1})));
}

TEST(BlockLogRatios, SplitsWholeBlocks) {
  // Two blocks of 4 samples per arm: medians 10 / 20 and 100 / 50.
  const std::vector<double> a = {9, 10, 10, 11, 100, 100, 90, 110};
  const std::vector<double> b = {20, 19, 21, 20, 50, 50, 40, 60};
  const auto d = block_log_ratios(a, b, 4);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_NEAR(d[0], std::log(2.0), 1e-15);
  EXPECT_NEAR(d[1], std::log(0.5), 1e-15);
  EXPECT_THROW(block_log_ratios(a, b, 3), Error);
  EXPECT_THROW(block_log_ratios(a, {1, 2}, 4), Error);
  EXPECT_THROW(block_log_ratios({0, 0}, {1, 1}, 2), Error);
}

TEST(SummarizeAa, CountsRatesAndQuantiles) {
  std::vector<AaComparison> runs;
  // 19 passes with |HL| = 0.001 * i and half-width 0.01 * (1 + i / 19), one regression, one
  // invalid.
  for (int i = 0; i < 19; ++i) {
    AaComparison c;
    c.decision = Decision::pass;
    c.log_ratio = (i % 2 ? -1 : 1) * 0.001 * i;
    c.log_upper = c.log_ratio + 0.01 * (1 + i / 19.0);
    c.cv = 0.01 * (i + 1);
    runs.push_back(c);
  }
  AaComparison fp;
  fp.decision = Decision::regression;
  fp.log_ratio = 0.05;
  fp.log_upper = 0.06;
  fp.cv = 0.5;
  runs.push_back(fp);
  AaComparison bad;
  bad.invalid = true;
  bad.log_ratio = 9;  // must not enter any statistic
  runs.push_back(bad);

  const AaSummary s = summarize_aa(runs);
  EXPECT_EQ(s.comparisons, 21);
  EXPECT_EQ(s.valid, 20);
  EXPECT_EQ(s.invalid, 1);
  EXPECT_EQ(s.regressions, 1);
  EXPECT_EQ(s.passes, 19);
  EXPECT_EQ(s.inconclusive, 0);
  EXPECT_DOUBLE_EQ(s.false_positive_rate, 0.05);
  const auto cp = clopper_pearson_interval(1, 20);
  EXPECT_DOUBLE_EQ(s.fp_exact.lower, cp.lower);
  EXPECT_DOUBLE_EQ(s.fp_exact.upper, cp.upper);
  EXPECT_DOUBLE_EQ(s.fp_wilson.upper, wilson_interval(1, 20).upper);
  // |HL| sorted: 0, 0.001, ..., 0.018, 0.05; the 0.95 quantile is at h = 18.05.
  EXPECT_NEAR(s.noise_floor, std::expm1(0.018 + 0.05 * (0.05 - 0.018)), 1e-12);
  // Half-widths: 0.01 (1 + i/19) for i < 19, and 0.01; h = 18.05 between 0.01 * (1 + 17/19)
  // and 0.01 * (1 + 18/19).
  const double h17 = 0.01 * (1 + 17 / 19.0), h18 = 0.01 * (1 + 18 / 19.0);
  EXPECT_NEAR(s.delta_min, std::expm1(h17 + 0.05 * (h18 - h17)), 1e-12);
  EXPECT_NEAR(s.median_cv, 0.105, 1e-12);  // cvs 0.01 .. 0.19 and 0.5: median of 20 values
}

TEST(SummarizeAa, UnboundedAndEmpty) {
  AaComparison open;
  open.decision = Decision::inconclusive;
  open.log_upper = kInf;
  const AaSummary s = summarize_aa({open, open});
  EXPECT_EQ(s.delta_min, kInf);
  EXPECT_EQ(s.inconclusive, 2);
  EXPECT_EQ(s.false_positive_rate, 0.0);

  AaComparison bad;
  bad.invalid = true;
  const AaSummary none = summarize_aa({bad});
  EXPECT_EQ(none.valid, 0);
  EXPECT_TRUE(std::isnan(none.false_positive_rate));
  EXPECT_TRUE(std::isnan(none.delta_min));
  EXPECT_THROW(summarize_aa({}, 1.0), Error);
}

}  // namespace
}  // namespace kgate::speed
