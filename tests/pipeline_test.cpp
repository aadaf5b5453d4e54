// The whole check pipeline on the cpu backend (runs in CI without a GPU): a correct kernel passes
// with a speed comparison against eager; a mutant fails with a shrunk minimal case and a repro.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "core/config.hpp"
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
  EXPECT_EQ(report.correctness.failed, 0)
      << (report.correctness.failures.empty() ? "" : report.correctness.failures[0].message);
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

TEST(Pipeline, TheRunsBudgetGrowthLeftAfterAKernel) {
  // What a kernel's comparisons grew by is taken from what the run had left (a worker is told it;
  // the first process has all of --budget-growth), never below 0.
  CheckOptions o;
  o.timing.interleave.growth_s = 30;
  KernelReport k;
  k.speed.resize(3);
  k.speed[0].budget_grown_s = 3;
  k.speed[2].budget_grown_s = 4;
  EXPECT_DOUBLE_EQ(growth_left_after(o, k), 23);
  o.worker.growth_left_s = 10;
  EXPECT_DOUBLE_EQ(growth_left_after(o, k), 3);
  o.worker.growth_left_s = 5;
  EXPECT_DOUBLE_EQ(growth_left_after(o, k), 0);
  o.worker.growth_left_s = 0;  // (0 left is 0 left, not the whole of --budget-growth)
  EXPECT_DOUBLE_EQ(growth_left_after(o, KernelReport{}), 0);
}

// One small timed case (the speed shapes take ~0.1 s a launch on a cpu).
CheckOptions quick_small_timing() {
  auto o = quick();
  o.cases = 8;
  o.timed_cases = {{Case::from_id("softmax:f32:B=64,N=512:contiguous:normal:0000000000000007"), 0}};
  return o;
}

TEST(Pipeline, TimedLaunchesAreCheckedOnePerBlockAtRandom) {
  Runner runner(Backend::cpu);
  const auto report = check_kernel(runner, find_kernel("softmax_cpu"), quick_small_timing());
  ASSERT_NE(report.outcome, Outcome::failed) << (report.speed.empty() ? "" : report.speed[0].note);
  ASSERT_EQ(report.speed.size(), 1u);
  const auto& s = report.speed[0];
  EXPECT_EQ(s.pools, 2);
  EXPECT_FALSE(s.wrong_while_timed.has_value());
  // Eager is the baseline: only the candidate's launches are checked, one per block.
  ASSERT_EQ(static_cast<int64_t>(s.checked_launches.size()), s.blocks);
  const int per_block = 2 * quick().timing.interleave.launches_per_arm;
  std::set<int64_t> indices;
  for (size_t i = 0; i < s.checked_launches.size(); ++i) {
    EXPECT_EQ(s.checked_launches[i].block, static_cast<int64_t>(i));
    EXPECT_EQ(s.checked_launches[i].arm, 1);
    EXPECT_GE(s.checked_launches[i].launch, 0);
    EXPECT_LT(s.checked_launches[i].launch, per_block);
    indices.insert(s.checked_launches[i].launch);
  }
  if (s.blocks >= 8) EXPECT_GT(indices.size(), 1u) << "the checked launch is always the same one";
}

// Gaming kernels that are right on every call the checks make: only a checked timed launch shows.
TEST(Pipeline, AKernelRightOnlyOnItsFirstCallsFailsWrongWhileTimed) {
  Runner runner(Backend::cpu);
  const auto o = quick_small_timing();
  const auto& k = find_kernel("mutant_softmax_cpu_right_first_calls");
  // 40 of its 64 right calls on the timed shape spent first (still right): with the warm-up's 20
  // or more, the first block goes past them however early the comparison could decide.
  runner.time_launches(k, o.timed_cases.at(0).kcase, 40, false);
  const auto report = check_kernel(runner, k, o);
  EXPECT_EQ(report.outcome, Outcome::failed);
  ASSERT_EQ(report.speed.size(), 1u);
  const auto& s = report.speed[0];
  EXPECT_EQ(s.decision, Outcome::failed);
  ASSERT_TRUE(s.wrong_while_timed.has_value()) << s.note;
  EXPECT_EQ(s.wrong_while_timed->rule, Reason::wrong_while_timed);
  EXPECT_NE(s.wrong_while_timed->message.find("wrong while timed"), std::string::npos)
      << s.wrong_while_timed->message;
  ASSERT_TRUE(report.correctness.minimal.has_value());
  EXPECT_EQ(report.correctness.minimal->rule, Reason::wrong_while_timed);
  EXPECT_EQ(report.correctness.failed, 1);
  EXPECT_EQ(report.correctness.cases, o.cases + 1);
  EXPECT_FALSE(s.checked_launches.empty());
}

TEST(Pipeline, ABaselineWrongWhileTimedMakesTheComparisonInvalidAndIsNamed) {
  Runner runner(Backend::cpu);
  const auto o = quick_small_timing();
  const Case& c = o.timed_cases.at(0).kcase;
  const auto rule = rule_for(find_op("softmax"), c.dtype, o);
  const auto& baseline = find_kernel("mutant_softmax_cpu_right_first_calls");
  // Past its 64 right calls on this shape first: a comparison that decides early (a loaded
  // machine's warm-up can stop at two batches) would otherwise end before the baseline goes wrong.
  runner.time_launches(baseline, c, 65, false);
  const auto s = runner.time_case(find_kernel("softmax_cpu"), &baseline, c, o.timing, 1, &rule);
  EXPECT_EQ(s.decision, Outcome::invalid) << s.note;
  EXPECT_FALSE(s.wrong_while_timed.has_value());  // the candidate is not blamed
  // The note names the baseline's checked launch of the last block, not the candidate's.
  const SpeedComparison::CheckedLaunch* last = nullptr;
  for (const auto& l : s.checked_launches)
    if (l.arm == 0) last = &l;
  ASSERT_NE(last, nullptr);
  const std::string where =
      "baseline 'mutant_softmax_cpu_right_first_calls' was wrong in a timed launch (block " +
      std::to_string(last->block) + ", launch " + std::to_string(last->launch + 1) + " of ";
  EXPECT_NE(s.note.find(where), std::string::npos) << s.note;
}

// A kernel baseline (the kernel already accepted) is checked in block 0 and in a random quarter of
// the later blocks; the candidate in every block.
TEST(Pipeline, AKernelBaselineIsCheckedInBlockZeroAndInARandomQuarterOfTheRest) {
  Runner runner(Backend::cpu);
  auto o = quick_small_timing();
  o.timing.interleave.blocks_per_stage = 64;
  o.timing.interleave.max_stages = 1;
  o.timing.interleave.time_budget_s = 30;
  const Case& c = o.timed_cases.at(0).kcase;
  const auto rule = rule_for(find_op("softmax"), c.dtype, o);
  const auto& k = find_kernel("softmax_cpu");
  const auto s = runner.time_case(k, &k, c, o.timing, 1, &rule);
  ASSERT_NE(s.decision, Outcome::invalid) << s.note;
  ASSERT_GE(s.blocks, 61) << s.note;
  std::vector<int> per_arm(2, 0);
  std::set<int64_t> candidate_blocks, baseline_blocks;
  for (const auto& l : s.checked_launches) {
    ++per_arm.at(static_cast<size_t>(l.arm));
    (l.arm == 1 ? candidate_blocks : baseline_blocks).insert(l.block);
  }
  EXPECT_EQ(per_arm[1], s.blocks);
  EXPECT_EQ(static_cast<int64_t>(candidate_blocks.size()), s.blocks);
  EXPECT_EQ(baseline_blocks.count(0), 1u);
  // Blocks 1 and later: each checks the baseline with odds 1/4. Of 60 or more, none: (3/4)^60 =
  // 3e-8; half or more (a coin instead of odds 1/4): 3e-5.
  const int later = per_arm[0] - 1;
  EXPECT_GT(later, 0);
  EXPECT_LT(2 * later, s.blocks - 1);
  std::printf("baseline checked in %d of %lld blocks\n", per_arm[0],
              static_cast<long long>(s.blocks));
}

TEST(Pipeline, AKernelThatCachesByPointerFailsWhileTimed) {
  Runner runner(Backend::cpu);
  const auto report = check_kernel(runner, find_kernel("mutant_softmax_cpu_caches_by_pointer"),
                                   quick_small_timing());
  EXPECT_EQ(report.outcome, Outcome::failed);
  ASSERT_FALSE(report.correctness.failures.empty());
  // The checks may meet a reused address first (the stale-output check); else timing does.
  const auto& rule = report.correctness.failures.front().rule;
  EXPECT_TRUE(rule == Reason::wrong_while_timed || rule == Reason::stale)
      << reason_name(rule) << ": " << report.correctness.failures.front().message;
  std::printf("caches_by_pointer: caught by rule %s\n", reason_name(rule));
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
  EXPECT_EQ(m.repro,
            "kgate replay --kernel mutant_softmax_cpu_tail_dropped '" + m.kcase.id() + "'");
  EXPECT_TRUE(report.speed.empty());  // an incorrect kernel is not timed
}

TEST(Pipeline, AKernelThatWritesOnlyIntoPoisonIsCaughtWrittenBefore) {
  Runner runner(Backend::cpu);
  auto o = quick();
  o.speed = false;
  const auto& k = find_kernel("mutant_softmax_cpu_spots_poison");
  o.behaviour_checks = false;  // plain cases run into poisoned outputs: it passes them all
  EXPECT_EQ(check_kernel(runner, k, o).outcome, Outcome::passed);
  o.behaviour_checks = true;
  const auto report = check_kernel(runner, k, o);
  EXPECT_EQ(report.outcome, Outcome::failed);
  ASSERT_FALSE(report.correctness.failures.empty());
  const auto& f = report.correctness.failures.front();
  EXPECT_EQ(f.rule, Reason::written_before);
  EXPECT_NE(f.message.find(
                "passes into poisoned outputs but fails into outputs that held earlier values"),
            std::string::npos)
      << f.message;
  // softmax_cpu writes every element whatever its output held.
  EXPECT_EQ(check_kernel(runner, find_kernel("softmax_cpu"), o).outcome, Outcome::passed);
}

TEST(Pipeline, ThePoisonIsNotOneFixedPattern) {
  // A kernel that computes only when its output holds kgate's old fixed NaN (0x7FC0DEAD) is caught
  // by the ordinary cases: the payload is drawn per run and case.
  Runner runner(Backend::cpu);
  auto o = quick();
  o.speed = false;
  o.behaviour_checks = false;
  const auto report = check_kernel(runner, find_kernel("mutant_softmax_cpu_knows_the_poison"), o);
  EXPECT_EQ(report.outcome, Outcome::failed);
  EXPECT_EQ(report.correctness.failed, report.correctness.cases - report.correctness.passed);
  EXPECT_GT(report.correctness.failed, report.correctness.cases / 2);
}

TEST(Pipeline, ReplayingAnIdGivesTheSameVerdict) {
  Runner runner(Backend::cpu);
  const auto& k = find_kernel("mutant_softmax_cpu_tail_dropped");
  const auto& op = find_op("softmax");
  const Case c = Case::from_id("softmax:f32:B=3,N=13:contiguous:normal:00000000000000aa");
  const auto a = runner.check_case(k, c, rule_for(op, c.dtype, CheckOptions{}));
  const auto b = runner.check_case(k, Case::from_id(c.id()), rule_for(op, c.dtype, CheckOptions{}));
  EXPECT_EQ(a.outcome, Outcome::failed);
  EXPECT_EQ(a.rule, Reason::memory);
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

// Ops that are not rows-by-columns are timed on shapes of their own, not the default guess.
TEST(Pipeline, GathersAndPoolsAreTimedOnTheirOwnShapes) {
  KernelInfo any;
  any.dtypes = {DType::f16};
  const auto emb = speed_cases(find_op("embedding"), any, 1, 2);
  ASSERT_EQ(emb.size(), 2u);
  EXPECT_EQ(emb[0].id().substr(0, std::string("embedding:f16:T=4096,V=32000,D=4096:").size()),
            "embedding:f16:T=4096,V=32000,D=4096:");
  EXPECT_EQ(emb[1].dims,
            (std::vector<std::pair<std::string, int64_t>>{{"T", 512}, {"V", 128256}, {"D", 2048}}));
  const auto pool = speed_cases(find_op("adaptive_avg_pool2d"), any, 1, 2);
  ASSERT_EQ(pool.size(), 2u);
  EXPECT_EQ(pool[1].dims, (std::vector<std::pair<std::string, int64_t>>{
                              {"B", 64}, {"C", 512}, {"H", 7}, {"W", 7}, {"OH", 1}, {"OW", 1}}));
}

}  // namespace
}  // namespace kgate

namespace kgate {
namespace {

// softmax_cpu, but every second call nudges one output element by a few ulps: inside allclose,
// yet not bitwise reproducible.
KernelInfo nondeterministic_softmax() {
  KernelInfo k = find_kernel("softmax_cpu");
  k.name = "test_nondeterministic_softmax";
  auto inner = k.launch;
  auto calls = std::make_shared<int>(0);
  k.launch = [inner, calls](const KernelCall& call) {
    inner(call);
    if (++*calls % 2 == 0 && call.outputs[0].numel() > 0)
      call.outputs[0].as<float>()[0] *= 1.0000003f;
  };
  return k;
}

// softmax_cpu, but it computes once per shape and then replays the cached output.
KernelInfo stale_softmax() {
  KernelInfo k = find_kernel("softmax_cpu");
  k.name = "test_stale_softmax";
  auto inner = k.launch;
  auto cache = std::make_shared<std::map<int64_t, std::vector<float>>>();
  k.launch = [inner, cache](const KernelCall& call) {
    const auto& y = call.outputs[0];
    auto it = cache->find(y.numel());
    if (it == cache->end()) {
      inner(call);
      (*cache)[y.numel()] = std::vector<float>(y.as<float>(), y.as<float>() + y.numel());
    } else {
      std::copy(it->second.begin(), it->second.end(), y.as<float>());
    }
  };
  return k;
}

TEST(Pipeline, NullKernelCalibrationRejectsZerosAndCopies) {
  Runner runner(Backend::cpu);
  auto o = quick();
  o.speed = false;
  const auto report = check_kernel(runner, find_kernel("softmax_cpu"), o);
  ASSERT_EQ(report.correctness.null_calibration.size(), 2u);
  for (const auto& [null_kernel, families] : report.correctness.null_calibration) {
    EXPECT_GE(families.size(), 4u) << null_kernel;
    for (const auto& [family, counts] : families) {
      EXPECT_GT(counts.first, 0) << null_kernel << " " << family;
      EXPECT_GT(counts.second, 0) << "the " << null_kernel << " null kernel passed every " << family
                                  << " case";
    }
  }
  for (const auto& w : report.correctness.warnings)
    EXPECT_EQ(w.find("too weak"), std::string::npos) << w;
  EXPECT_GE(report.correctness.behaviour_checks, 8);  // stale + determinism, one case per family
  EXPECT_EQ(report.correctness.failed, 0);
}

TEST(Pipeline, DeterminismCheckCatchesBitwiseDifferences) {
  Runner runner(Backend::cpu);
  auto o = quick();
  o.speed = false;
  o.null_calibration_cases = 0;
  const auto report = check_kernel(runner, nondeterministic_softmax(), o);
  EXPECT_EQ(report.outcome, Outcome::failed);
  bool found = false;
  for (const auto& f : report.correctness.failures) found |= f.rule == Reason::determinism;
  EXPECT_TRUE(found) << "no determinism failure recorded";
  // The minimal case is the failing behaviour check itself, not a plain (passing) rerun of it.
  ASSERT_TRUE(report.correctness.minimal.has_value());
  EXPECT_EQ(report.correctness.minimal->rule, Reason::determinism);
  EXPECT_EQ(report.correctness.minimal->outcome, Outcome::failed);
}

TEST(Pipeline, StaleCheckCatchesCachedOutputs) {
  Runner runner(Backend::cpu);
  const auto k = stale_softmax();
  const auto& op = find_op("softmax");
  const Case c = Case::from_id("softmax:f32:B=2,N=5:contiguous:normal:0000000000000001");
  const auto r = runner.check_stale(k, c, rule_for(op, c.dtype, CheckOptions{}));
  EXPECT_EQ(r.outcome, Outcome::failed);
  EXPECT_EQ(r.rule, Reason::stale);
}

}  // namespace
}  // namespace kgate

namespace kgate {
namespace {

// A kernel's settings come from one place (resolve_settings): config global < op < kernel < the
// command line's settings, then --rule / --atol / --rtol over every dtype, then the defaults. The
// rule of a case, the generated cases and the timing are read from it.
// A kernel's correctness cases: the generated ones, then its guard's boundary cases (a package's
// KernelInfo::guard_cases), then the run's extra cases; --case alone replaces them all.
TEST(Pipeline, GuardCasesComeWithTheKernelBeforeTheRunsExtraCases) {
  KernelInfo k = find_kernel("softmax_cpu");
  const OpSignature& op = find_op("softmax");
  const auto drawn = [&](int64_t n, const std::string& family) {
    Case c;
    c.op = "softmax";
    c.dtype = DType::f32;
    c.dims = {{"B", 2}, {"N", n}};
    c.family = family;
    return c;
  };
  k.guard_cases = [&](uint64_t seed) {
    EXPECT_EQ(seed, 11u);
    return std::vector<Case>{drawn(8, "guard_inside"), drawn(9, "guard_outside")};
  };
  CheckOptions o;
  o.seed = 11;
  o.cli.cases = 4;
  o.extra_cases = {drawn(33, "extra")};
  const auto cases = correctness_cases(k, o);
  const auto generated =
      props::generate_cases(op, traits_of(k), resolve_settings(op, k.name, o).cases);
  ASSERT_EQ(cases.size(), generated.size() + 3);
  for (size_t i = 0; i < generated.size(); ++i) EXPECT_EQ(cases[i].id(), generated[i].id());
  EXPECT_EQ(cases[generated.size()].family, "guard_inside");
  EXPECT_EQ(cases[generated.size() + 1].family, "guard_outside");
  EXPECT_EQ(cases[generated.size() + 2].family, "extra");
  const auto added = guard_and_extra_cases(k, o);
  ASSERT_EQ(added.size(), 3u);
  EXPECT_EQ(added[2].dims[1].second, 33);
  o.only_cases = {drawn(5, "replay")};
  ASSERT_EQ(correctness_cases(k, o).size(), 1u);
}

TEST(Pipeline, AKernelsSettingsAreResolvedInOnePlace) {
  CheckOptions o;
  o.config = parse_config(nlohmann::json::parse(R"({
    "format": "kgate-config/1",
    "global": {"rule": "ulp", "delta": 0.02},
    "ops": {"softmax": {"cases": 100, "families": ["random"], "tolerance": {"f32": {"rtol": 0.02}}}},
    "kernels": {"softmax_cpu": {"cases": 12, "alpha": 0.01, "fragile_margin": 0.5}}
  })"),
                          "kgate.config.json", correctness::rule_names());
  o.seed = 7;
  o.timing.interleave.time_budget_s = 2.5;
  const OpSignature& op = find_op("softmax");
  KernelSettings s = resolve_settings(op, "softmax_cpu", o);
  EXPECT_EQ(s.cases.seed, 7u);
  EXPECT_EQ(s.cases.cases, 12);                                       // kernel over op
  EXPECT_EQ(s.cases.families, (std::vector<std::string>{"random"}));  // op
  EXPECT_EQ(s.rule, "ulp");                                           // global
  EXPECT_DOUBLE_EQ(s.timing.interleave.delta, 0.02);                  // global
  EXPECT_DOUBLE_EQ(s.timing.interleave.alpha, 0.01);                  // kernel
  EXPECT_DOUBLE_EQ(s.timing.interleave.time_budget_s, 2.5);           // the options' own
  EXPECT_DOUBLE_EQ(*s.gates.fragile_margin, 0.5);
  EXPECT_DOUBLE_EQ(rule_for(op, DType::f32, s).tolerance.rtol,
                   0.02);  // the op's f32 tolerance in the config
  EXPECT_EQ(rule_for(op, DType::f32, s).kind, correctness::parse_rule("ulp"));
  // Another kernel of the op: the op's and the global settings, the options' case count unused.
  s = resolve_settings(op, "softmax_block", o);
  EXPECT_EQ(s.cases.cases, 100);
  // --rule and --rtol win over the config; the count given on the command line over the kernel's.
  o.rule = "allclose";
  o.rtol = 0.125;
  o.cli.cases = 3;
  s = resolve_settings(op, "softmax_cpu", o);
  EXPECT_EQ(s.cases.cases, 3);
  EXPECT_EQ(rule_for(op, DType::f32, s).kind, correctness::parse_rule("allclose"));
  EXPECT_DOUBLE_EQ(rule_for(op, DType::f32, s).tolerance.rtol, 0.125);
  // Without a config: the op's default rule per dtype and the options' count.
  s = resolve_settings(op, "softmax_cpu", CheckOptions{});
  EXPECT_EQ(s.cases.cases, CheckOptions{}.cases);
  EXPECT_EQ(rule_for(op, DType::bf16, s).kind, default_rule(op, DType::bf16));
  EXPECT_EQ(default_rule(op, DType::bf16), correctness::RuleKind::eager_relative);
  EXPECT_EQ(default_rule(op, DType::f32), correctness::RuleKind::allclose);
}

}  // namespace
}  // namespace kgate
