// Tolerance sensitivity summaries on synthetic cases with known answers.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "gates/sensitivity/sweep.hpp"

namespace kgate::sensitivity {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

CaseErrors passing(double margin, std::vector<double> needed = {}) {
  CaseErrors c;
  c.case_id = "case";
  c.margin = margin;
  c.max_abs = margin * 1e-5;
  c.max_rel = margin * 1e-6;
  c.needed_atol = std::move(needed);
  return c;
}

SweepGrid small_grid() {
  SweepGrid g;
  g.atols = {1e-2, 1e-4};
  g.rtols = {1e-1, 1e-3};
  g.scales = {0.25, 0.5, 1, 2};
  return g;
}

TEST(Sweep, QuantilesAreNearestRank) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // unsorted on purpose
  const auto q = quantiles(v);
  EXPECT_EQ(q.p50, 50);
  EXPECT_EQ(q.p90, 90);
  EXPECT_EQ(q.p99, 99);
  EXPECT_EQ(q.max, 100);
  const auto one = quantiles({3.5});
  EXPECT_EQ(one.p50, 3.5);
  EXPECT_EQ(one.max, 3.5);
  EXPECT_EQ(quantiles({}).max, 0);
}

TEST(Sweep, PassRateGridAndFrontier) {
  // Case A needs atol 0 at rtol 1e-1 and 5e-3 at rtol 1e-3; case B 2e-5 and 2e-3.
  const auto s = summarize(DType::f32, {passing(0.1, {0, 5e-3}), passing(0.2, {2e-5, 2e-3})},
                           small_grid(), 0.8);
  ASSERT_EQ(s.pass_rate.size(), 2u);
  EXPECT_DOUBLE_EQ(s.pass_rate[0][0], 1.0);  // rtol 1e-1, atol 1e-2
  EXPECT_DOUBLE_EQ(s.pass_rate[0][1], 1.0);  // rtol 1e-1, atol 1e-4: 0 and 2e-5 <= 1e-4
  EXPECT_DOUBLE_EQ(s.pass_rate[1][0], 1.0);  // rtol 1e-3, atol 1e-2
  EXPECT_DOUBLE_EQ(s.pass_rate[1][1], 0.0);  // rtol 1e-3, atol 1e-4: neither
  EXPECT_DOUBLE_EQ(s.frontier_atol[0], 2e-5);
  EXPECT_DOUBLE_EQ(s.frontier_atol[1], 5e-3);
  EXPECT_EQ(s.failed, 0);
  EXPECT_EQ(s.verdict, "ok");
}

TEST(Sweep, ScalesPassWhenTheMarginFits) {
  const auto s = summarize(DType::f16, {passing(0.1), passing(0.2), passing(0.5), passing(0.9)},
                           small_grid(), 0.95);
  ASSERT_EQ(s.scale_pass_rate.size(), 4u);
  EXPECT_DOUBLE_EQ(s.scale_pass_rate[0], 0.5);   // 0.25x: margins 0.1, 0.2
  EXPECT_DOUBLE_EQ(s.scale_pass_rate[1], 0.75);  // 0.5x
  EXPECT_DOUBLE_EQ(s.scale_pass_rate[2], 1.0);
  EXPECT_DOUBLE_EQ(s.scale_pass_rate[3], 1.0);
  EXPECT_DOUBLE_EQ(s.worst_margin, 0.9);
  EXPECT_DOUBLE_EQ(s.margin.p50, 0.2);
  EXPECT_DOUBLE_EQ(s.margin.max, 0.9);
  EXPECT_FALSE(s.fragile);  // 0.9 <= 0.95
  EXPECT_EQ(s.verdict, "ok");
  // A case without needed_atol (the rule measured none) passes no grid point.
  EXPECT_DOUBLE_EQ(s.pass_rate[0][0], 0.0);
  EXPECT_EQ(s.frontier_atol[0], kInf);
}

TEST(Sweep, FragileAboveTheThresholdOnly) {
  const std::vector<CaseErrors> cases = {passing(0.3), passing(0.81)};
  EXPECT_EQ(summarize(DType::f32, cases, small_grid(), 0.8).verdict, "FRAGILE");
  EXPECT_TRUE(summarize(DType::f32, cases, small_grid(), 0.8).fragile);
  EXPECT_EQ(summarize(DType::f32, cases, small_grid(), 0.81).verdict,
            "ok");  // at the threshold: not above
  EXPECT_EQ(summarize(DType::f32, {passing(1.0)}, small_grid(), 1.0).verdict, "ok");
}

TEST(Sweep, AFailureOutranksFragile) {
  const auto s = summarize(DType::f32, {passing(0.9), passing(1.5)}, small_grid(), 0.8);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.hard_failures, 0);
  EXPECT_FALSE(s.fragile);
  EXPECT_EQ(s.verdict, "FAILED");
  EXPECT_DOUBLE_EQ(s.worst_margin, 1.5);
  EXPECT_DOUBLE_EQ(s.scale_pass_rate[3], 1.0);  // 2x the tolerance passes both
}

TEST(Sweep, HardFailuresFailAtEveryTolerance) {
  CaseErrors bad;
  bad.case_id = "unwritten";
  bad.hard_failure = true;
  bad.hard_failure_rule = "memory";
  bad.margin = 0;
  bad.needed_atol = {0, 0};  // ignored: the case fails whatever the tolerance
  const auto s = summarize(DType::bf16, {passing(0.1, {0, 0}), bad}, small_grid(), 0.8);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.hard_failures, 1);
  EXPECT_EQ(s.worst_margin, kInf);
  EXPECT_EQ(s.frontier_atol[0], kInf);
  EXPECT_DOUBLE_EQ(s.pass_rate[0][0], 0.5);
  EXPECT_DOUBLE_EQ(s.scale_pass_rate[3], 0.5);
  EXPECT_DOUBLE_EQ(s.margin.max, 0.1);  // the distribution is over the judged cases only
  EXPECT_EQ(s.verdict, "FAILED");
}

TEST(Sweep, NanMarginFails) {
  const auto s = summarize(DType::f32, {passing(std::nan(""))}, small_grid(), 0.8);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.verdict, "FAILED");
}

TEST(Sweep, NoCasesIsOkAndEmpty) {
  const auto s = summarize(DType::f32, {}, small_grid(), 0.8);
  EXPECT_EQ(s.cases, 0);
  EXPECT_EQ(s.verdict, "ok");
}

TEST(Sweep, ThresholdOutsideTheUnitIntervalIsAUsageError) {
  EXPECT_THROW(summarize(DType::f32, {passing(0.1)}, small_grid(), 0), Error);
  EXPECT_THROW(summarize(DType::f32, {passing(0.1)}, small_grid(), 1.5), Error);
}

}  // namespace
}  // namespace kgate::sensitivity
