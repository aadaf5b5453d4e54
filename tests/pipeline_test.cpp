// The whole check pipeline on the cpu backend (runs in CI without a GPU): a correct kernel passes
// with a speed comparison against eager; a mutant fails with a shrunk minimal case and a repro.
#include <gtest/gtest.h>

#include "references/catalogue.hpp"
#include "runtime/pipeline.hpp"

namespace kgate {
namespace {

CheckOptions quick() {
  CheckOptions o;
  o.seed = 3;
  o.cases = 40;
  o.speed_cases = 1;
  o.timing.interleave.blocks_per_stage = 10;
  o.timing.interleave.max_stages = 2;
  o.timing.interleave.time_budget_s = 3;
  o.timing.interleave.launches_per_arm = 2;
  return o;
}

TEST(Pipeline, CorrectCpuKernelPassesAndIsTimed) {
  Runner runner(Backend::cpu);
  const auto report = check_kernel(runner, find_kernel("softmax_cpu"), quick());
  EXPECT_EQ(report.correctness.cases, 40);
  EXPECT_EQ(report.correctness.failed, 0) << (report.correctness.failures.empty() ? "" : report.correctness.failures[0].message);
  EXPECT_GT(report.correctness.worst_margin, 0.0);
  EXPECT_LE(report.correctness.worst_margin, 1.0);
  ASSERT_EQ(report.speed.size(), 1u);
  const auto& s = report.speed[0];
  EXPECT_EQ(s.timer, "chrono");
  EXPECT_EQ(s.baseline, "eager");
  EXPECT_GE(s.blocks, 3);  // the time budget may stop it before the first full stage
  EXPECT_GT(s.ratio, 0.0);
  EXPECT_FALSE(s.candidate_ns.empty());
}

TEST(Pipeline, MutantFailsWithAMinimalCase) {
  Runner runner(Backend::cpu);
  auto o = quick();
  o.speed = false;
  const auto report = check_kernel(runner, find_kernel("mutant_softmax_cpu_tail_dropped"), o);
  EXPECT_EQ(report.outcome, Outcome::failed);
  EXPECT_GT(report.correctness.failed, 0);
  ASSERT_TRUE(report.correctness.minimal.has_value());
  const auto& m = *report.correctness.minimal;
  EXPECT_EQ(m.outcome, Outcome::failed);
  EXPECT_EQ(m.kcase.dim("B"), 1);
  EXPECT_EQ(m.kcase.dim("N"), 1);  // N=1: the whole row is the dropped tail
  EXPECT_EQ(m.kcase.layout, Layout::contiguous);
  EXPECT_EQ(m.repro, "kgate replay --kernel mutant_softmax_cpu_tail_dropped '" + m.kcase.id() + "'");
  EXPECT_TRUE(report.speed.empty());  // an incorrect kernel is not timed
}

TEST(Pipeline, ReplayingAnIdGivesTheSameVerdict) {
  Runner runner(Backend::cpu);
  const auto& k = find_kernel("mutant_softmax_cpu_tail_dropped");
  const auto& op = find_op("softmax");
  const Case c = Case::from_id("softmax:f32:B=3,N=13:contiguous:normal:00000000000000aa");
  const auto a = runner.check_case(k, c, rule_for(op, c.dtype, CheckOptions{}));
  const auto b = runner.check_case(k, Case::from_id(c.id()), rule_for(op, c.dtype, CheckOptions{}));
  EXPECT_EQ(a.outcome, Outcome::failed);
  EXPECT_EQ(a.rule, "memory");
  EXPECT_EQ(a.vs_reference.unwritten, 3 * 5);  // 13 % 8 = 5 tail elements per row never written
  EXPECT_EQ(a.message, b.message);
}

TEST(Pipeline, SpeedCasesFitTheKernel) {
  const auto cases = speed_cases(find_op("softmax"), find_kernel("softmax_cpu"), 1, 3);
  ASSERT_EQ(cases.size(), 3u);
  for (const auto& c : cases) {
    EXPECT_EQ(c.dtype, DType::f32);
    EXPECT_NEAR(static_cast<double>(c.numel_hint()), 4.0 * 1024 * 1024, 4.0 * 1024 * 1024 * 0.01);
  }
}

}  // namespace
}  // namespace kgate
