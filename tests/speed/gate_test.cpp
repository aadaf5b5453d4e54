// The speed gate's verdicts (gates/speed/gate.hpp) on synthetic runs with known answers: a
// comparison's decision from its interleaved run, the speed of light's veto, and the run-wide Holm
// correction.
#include <gtest/gtest.h>

#include <cmath>

#include "gates/speed/gate.hpp"

namespace kgate::speed {
namespace {

// A run of `blocks` kept blocks (baseline 100 ns, candidate `candidate_ns`) plus one dropped block,
// decided `decision`.
InterleaveResult run(Decision decision, double candidate_ns, int blocks = 4) {
  InterleaveResult r;
  for (int i = 0; i < blocks; ++i) {
    Block b;
    b.a = {100, 100};
    b.b = {candidate_ns, candidate_ns};
    r.blocks.push_back(b);
  }
  Block dropped;
  dropped.a = {1};
  dropped.b = {1};
  dropped.dropped = "throttled";
  r.blocks.push_back(dropped);
  r.decision.decision = decision;
  r.decision.hodges_lehmann = std::log(candidate_ns / 100);
  r.decision.lower = std::log(0.9 * candidate_ns / 100);
  r.decision.upper = std::log(1.1 * candidate_ns / 100);
  r.decision.p_regression = 0.01;
  return r;
}

GateInputs inputs() {
  GateInputs in;
  in.max_budget_factor = 3;
  in.min_blocks = 10;
  in.candidate = "softmax_v2";
  in.baseline = "eager";
  return in;
}

TEST(SpeedGate, TheRunsDecisionAndItsEstimate) {
  SpeedComparison cmp;
  decide_comparison(run(Decision::regression, 120), inputs(), cmp);
  EXPECT_EQ(cmp.decision, Outcome::regressed);
  EXPECT_EQ(cmp.blocks, 5);
  EXPECT_EQ(cmp.dropped_blocks, 1);
  EXPECT_EQ(cmp.baseline_ns.size(), 8u);  // the dropped block's samples left out
  EXPECT_DOUBLE_EQ(cmp.baseline_median_ns, 100);
  EXPECT_DOUBLE_EQ(cmp.candidate_median_ns, 120);
  EXPECT_NEAR(cmp.ratio, 1.2, 1e-12);
  EXPECT_NEAR(cmp.ratio_lower, 1.08, 1e-12);
  EXPECT_NEAR(cmp.ratio_upper, 1.32, 1e-12);
  EXPECT_DOUBLE_EQ(cmp.p_value, 0.01);
  EXPECT_DOUBLE_EQ(cmp.p_adjusted, 0.01);
  EXPECT_EQ(cmp.note, "");
  EXPECT_FALSE(cmp.sol_enforced);  // no floor: no speed of light
  SpeedComparison pass, open;
  decide_comparison(run(Decision::pass, 100), inputs(), pass);
  EXPECT_EQ(pass.decision, Outcome::passed);
  decide_comparison(run(Decision::inconclusive, 101), inputs(), open);
  EXPECT_EQ(open.decision, Outcome::inconclusive);
}

TEST(SpeedGate, AnInvalidRunIsInvalidWithItsReason) {
  auto r = run(Decision::pass, 100);
  r.invalid = true;
  r.invalid_reason = "3 of 5 blocks throttled";
  SpeedComparison cmp;
  cmp.note = "earlier";
  decide_comparison(r, inputs(), cmp);
  EXPECT_EQ(cmp.decision, Outcome::invalid);
  EXPECT_EQ(cmp.note, "earlier; 3 of 5 blocks throttled");
}

TEST(SpeedGate, ARunThatCouldNotDecideSaysWhatBudgetWould) {
  auto r = run(Decision::inconclusive, 100);
  r.budget_needed_s = 41.2;
  SpeedComparison cmp;
  decide_comparison(r, inputs(), cmp);
  EXPECT_EQ(cmp.decision, Outcome::inconclusive);
  EXPECT_EQ(cmp.note,
            "no decision was possible: 5 blocks fit 3 x the time budget, and a decision needs 10; "
            "--time-budget 42 would allow it");
}

// 1 MB read + 1 MB written at 1 TB/s: 2 us at the copy bandwidth, 2 / 1.5 = 1.33 us the floor.
TEST(SpeedGate, FasterThanLightIsInvalidInColdCacheOnly) {
  GateInputs in = inputs();
  in.light.read_bytes = 1e6;
  in.light.written_bytes = 1e6;
  in.light.ceiling_bytes_per_s = 1e12;
  SpeedComparison slow;  // 2000 ns vs 2000 ns: at the bandwidth, within the margin
  auto r = run(Decision::pass, 2000);
  for (auto& b : r.blocks) b.a = {2000, 2000};
  decide_comparison(r, in, slow);
  EXPECT_EQ(slow.decision, Outcome::passed);
  EXPECT_TRUE(slow.sol_enforced);
  EXPECT_NEAR(slow.sol_candidate_fraction, 1, 1e-12);
  EXPECT_NEAR(slow.sol_baseline_fraction, 1, 1e-12);

  r = run(Decision::pass, 500);  // the candidate 4x the bandwidth: faster than the hardware allows
  for (auto& b : r.blocks) b.a = {2000, 2000};
  SpeedComparison fast;
  decide_comparison(r, in, fast);
  EXPECT_EQ(fast.decision, Outcome::invalid);
  EXPECT_NE(fast.note.find("faster than the hardware allows: 'softmax_v2'"), std::string::npos)
      << fast.note;

  r = run(Decision::regression, 2000);  // the baseline too fast: the floor is suspect
  for (auto& b : r.blocks) b.a = {500, 500};
  SpeedComparison floor;
  decide_comparison(r, in, floor);
  EXPECT_EQ(floor.decision, Outcome::invalid);
  EXPECT_NE(floor.note.find("baseline 'eager' (is the op's min_bytes floor too high?)"),
            std::string::npos)
      << floor.note;

  in.flush_l2 = false;  // warm cache: reported, not enforced
  SpeedComparison warm;
  r = run(Decision::pass, 500);
  for (auto& b : r.blocks) b.a = {2000, 2000};
  decide_comparison(r, in, warm);
  EXPECT_EQ(warm.decision, Outcome::passed);
  EXPECT_FALSE(warm.sol_enforced);
  EXPECT_NEAR(warm.sol_candidate_fraction, 4, 1e-12);
}

// Holm's m is the number of comparisons that were timed: UNCHANGED entries (not timed) do not make
// a real regression's correction stricter.
TEST(SpeedGate, HolmLeavesUnchangedEntriesOut) {
  std::vector<KernelReport> kernels(2);
  kernels[0].name = "changed";
  kernels[0].outcome = Outcome::regressed;
  SpeedComparison regressed;
  regressed.decision = Outcome::regressed;
  regressed.p_value = 0.02;
  regressed.alpha = 0.05;
  kernels[0].speed.push_back(regressed);
  kernels[1].name = "same";
  for (int i = 0; i < 2; ++i) {
    SpeedComparison unchanged;
    unchanged.decision = Outcome::unchanged;
    unchanged.p_value = 1;
    unchanged.alpha = 0.05;
    unchanged.gates = false;
    kernels[1].speed.push_back(unchanged);
  }
  apply_holm(kernels);
  EXPECT_EQ(kernels[0].speed[0].decision, Outcome::regressed);  // m = 1: 0.02 <= 0.05
  EXPECT_DOUBLE_EQ(kernels[0].speed[0].p_adjusted, 0.02);
  EXPECT_EQ(kernels[0].outcome, Outcome::regressed);
  // A second timed comparison does count: m = 2, 0.04 still regressed; m = 3 would not be.
  SpeedComparison passed;
  passed.decision = Outcome::passed;
  passed.p_value = 0.9;
  passed.alpha = 0.05;
  kernels[1].speed.push_back(passed);
  apply_holm(kernels);
  EXPECT_DOUBLE_EQ(kernels[0].speed[0].p_adjusted, 0.04);
  EXPECT_EQ(kernels[0].speed[0].decision, Outcome::regressed);
}

// A regression that does not survive the correction is inconclusive, says why, and its kernel is
// no longer regressed; skipped and invalid comparisons are not counted.
TEST(SpeedGate, HolmDemotesARegressionThatDoesNotSurvive) {
  std::vector<KernelReport> kernels(1);
  kernels[0].outcome = Outcome::regressed;
  for (double p : {0.03, 0.04, 0.5}) {
    SpeedComparison s;
    s.decision = p < 0.05 ? Outcome::regressed : Outcome::passed;
    s.p_value = p;
    s.alpha = 0.05;
    kernels[0].speed.push_back(s);
  }
  SpeedComparison skipped;
  skipped.decision = Outcome::skipped;
  skipped.p_value = 0;
  kernels[0].speed.push_back(skipped);
  apply_holm(kernels);
  // Holm, m = 3: 0.03 x 3 = 0.09, max(0.09, 0.04 x 2) = 0.09, max(0.09, 0.5) = 0.5.
  EXPECT_DOUBLE_EQ(kernels[0].speed[0].p_adjusted, 0.09);
  EXPECT_DOUBLE_EQ(kernels[0].speed[1].p_adjusted, 0.09);
  EXPECT_DOUBLE_EQ(kernels[0].speed[2].p_adjusted, 0.5);
  EXPECT_EQ(kernels[0].speed[0].decision, Outcome::inconclusive);
  EXPECT_EQ(kernels[0].speed[0].note, "regression not significant after Holm correction");
  EXPECT_EQ(kernels[0].speed[3].decision, Outcome::skipped);
  EXPECT_EQ(kernels[0].outcome, Outcome::inconclusive);
}

}  // namespace
}  // namespace kgate::speed
