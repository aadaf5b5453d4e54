// The runner side of guards, on the cpu backend (no GPU): a call a kernel does not accept runs the
// op's eager reference into the outputs and is marked "fallback"; timing such a case is skipped
// with a note; check_kernel counts fallback cases, runs the same cases on a baseline kernel, times
// against it, and computes call-weighted workload speedups; the new report fields survive JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/report.hpp"
#include "references/catalogue.hpp"
#include "runtime/pipeline.hpp"

namespace kgate {
namespace {

/// Row softmax of contiguous f32 x:[B, N] into y (double accumulation); `zeros`: writes 0 instead.
void cpu_softmax(const KernelCall& call, bool zeros) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& y = call.outputs.at(0);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  const float* xp = x.as<const float>();
  float* yp = y.as<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = xp + r * n;
    float* yr = yp + r * n;
    double m = -INFINITY, s = 0;
    for (int64_t i = 0; i < n; ++i) m = std::max<double>(m, xr[i]);
    for (int64_t i = 0; i < n; ++i) s += std::exp(static_cast<double>(xr[i]) - m);
    for (int64_t i = 0; i < n; ++i)
      yr[i] = zeros ? 0.f : static_cast<float>(std::exp(static_cast<double>(xr[i]) - m) / s);
  }
}

/// A cpu kernel with a guard: contiguous f32 rows of at most `max_n` elements.
KernelInfo guarded_kernel(const std::string& name, int64_t max_n, bool zeros,
                          bool with_reason = true) {
  KernelInfo k;
  k.name = name;
  k.op = "softmax";
  k.backend = Backend::cpu;
  k.dtypes = {DType::f32};
  k.tile_sizes = {max_n};
  k.accepts_strided = true;  // strided calls fall back: layout cases test that side
  k.accepts_unaligned = true;
  k.source = "tests/package/package_fallback_test.cpp";
  auto why = [max_n](const KernelCall& call) -> std::string {
    const TensorView& x = call.inputs.at(0);
    if (!x.is_contiguous() || !call.outputs.at(0).is_contiguous()) return "not contiguous";
    if (x.sizes[1] > max_n)
      return "N=" + std::to_string(x.sizes[1]) + " is above " + std::to_string(max_n);
    return {};
  };
  k.accepts = [why](const KernelCall& call) { return why(call).empty(); };
  if (with_reason) k.rejection_reason = why;
  k.launch = [zeros, why](const KernelCall& call) {
    if (!why(call).empty())
      throw Error(ErrorKind::usage, "launched outside its guard: " + why(call));
    cpu_softmax(call, zeros);
  };
  return k;
}

CheckOptions quick() {
  CheckOptions o;
  o.seed = 5;
  o.cases = 12;
  o.families = {"random", "ragged", "layout"};
  o.speed_cases = 1;
  o.timing.interleave.blocks_per_stage = 6;
  o.timing.interleave.max_stages = 1;
  o.timing.interleave.time_budget_s = 1;
  o.timing.interleave.launches_per_arm = 2;
  o.timing.max_warmup_batches = 2;
  return o;
}

Case softmax_case(int64_t b, int64_t n, Layout layout = Layout::contiguous) {
  Case c = Case::from_id("softmax:f32:B=" + std::to_string(b) + ",N=" + std::to_string(n) + ":" +
                         layout_name(layout) + ":normal:0000000000000abc");
  return c;
}

TEST(PackageFallback, OutsideTheGuardTheReferenceRuns) {
  Runner runner(Backend::cpu);
  const auto k = guarded_kernel("cpu_zeros_guarded", 16, /*zeros=*/true);
  const auto rule = rule_for(find_op("softmax"), DType::f32, CheckOptions{});

  const auto outside = runner.check_case(k, softmax_case(3, 100), rule);
  EXPECT_EQ(outside.outcome, Outcome::passed) << outside.message;
  EXPECT_TRUE(outside.fallback);
  EXPECT_EQ(outside.rule, Reason::fallback);
  EXPECT_EQ(outside.message,
            "fallback: outside the guard of 'cpu_zeros_guarded' (N=100 is above 16); the eager "
            "reference ran instead");
  EXPECT_EQ(outside.vs_reference.max_abs, 0.0);  // the reference's own output
  EXPECT_EQ(outside.vs_reference.unwritten, 0);
  EXPECT_EQ(outside.vs_reference.elements, 300);

  const auto strided = runner.check_case(k, softmax_case(3, 8, Layout::strided), rule);
  EXPECT_TRUE(strided.fallback);
  EXPECT_EQ(strided.outcome, Outcome::passed) << strided.message;

  // Inside the guard the (wrong) kernel itself runs and is caught.
  const auto inside = runner.check_case(k, softmax_case(3, 8), rule);
  EXPECT_FALSE(inside.fallback);
  EXPECT_EQ(inside.outcome, Outcome::failed);
  EXPECT_NE(inside.rule, Reason::fallback);

  // Without a reason the message still says why the reference ran.
  const auto quiet = guarded_kernel("cpu_quiet", 16, true, /*with_reason=*/false);
  const auto r = runner.check_case(quiet, softmax_case(2, 40), rule);
  EXPECT_TRUE(r.fallback);
  EXPECT_EQ(r.message,
            "fallback: outside the guard of 'cpu_quiet' (outside the kernel's guard); the eager "
            "reference "
            "ran instead");
}

TEST(PackageFallback, TimingOutsideTheGuardIsSkipped) {
  Runner runner(Backend::cpu);
  const auto k = guarded_kernel("cpu_guarded", 300, false);
  TimingOptions t = quick().timing;
  const auto skipped = runner.time_case(k, nullptr, softmax_case(4, 1000), t, 1);
  EXPECT_EQ(skipped.decision, Outcome::skipped);
  EXPECT_EQ(skipped.note,
            "not timed: the case is outside the guard of 'cpu_guarded' (N=1000 is above 300), "
            "where the reference runs "
            "instead");
  EXPECT_TRUE(skipped.candidate_ns.empty());

  const auto timed = runner.time_case(k, nullptr, softmax_case(4, 256), t, 1);
  EXPECT_NE(timed.decision, Outcome::skipped) << timed.note;
  EXPECT_FALSE(timed.candidate_ns.empty());

  // A baseline outside its own guard is timed through its fallback (eager).
  const auto old = guarded_kernel("cpu_old", 100, false);
  const auto vs_old = runner.time_case(k, &old, softmax_case(4, 256), t, 1);
  EXPECT_EQ(vs_old.baseline, "cpu_old");
  EXPECT_NE(vs_old.decision, Outcome::skipped);
  EXPECT_NE(vs_old.note.find("outside the guard of baseline 'cpu_old': timed its fallback (eager)"),
            std::string::npos)
      << vs_old.note;
}

TEST(PackageFallback, ByteIdenticalCodeIsUnchangedAndNotTimed) {
  Runner runner(Backend::cpu);
  auto k = guarded_kernel("cpu_new", 300, false);
  auto old = guarded_kernel("cpu_old", 300, false);
  k.code_digest = old.code_digest = "5f2c0e3d9a1b7c44";
  TimingOptions t = quick().timing;
  const auto same = runner.time_case(k, &old, softmax_case(4, 256), t, 1);
  EXPECT_EQ(same.decision, Outcome::unchanged);
  EXPECT_TRUE(same.candidate_ns.empty());
  EXPECT_EQ(same.blocks, 0);
  EXPECT_NE(same.note.find("'cpu_new' and baseline 'cpu_old' run byte-identical code"),
            std::string::npos)
      << same.note;
  // Other code, or no digest on one side: timed.
  old.code_digest = "0000000000000000";
  EXPECT_NE(runner.time_case(k, &old, softmax_case(4, 256), t, 1).decision, Outcome::unchanged);
  old.code_digest.clear();
  k.code_digest.clear();
  EXPECT_NE(runner.time_case(k, &old, softmax_case(4, 256), t, 1).decision, Outcome::unchanged);
  // A kernel against itself (kgate calibrate's A/A) is timed.
  k.code_digest = "5f2c0e3d9a1b7c44";
  const auto aa = runner.time_case(k, &k, softmax_case(4, 256), t, 1);
  EXPECT_NE(aa.decision, Outcome::unchanged);
  EXPECT_FALSE(aa.candidate_ns.empty());
}

TEST(PackageFallback, CheckKernelCoversBothSidesAndTheBaseline) {
  Runner runner(Backend::cpu);
  const auto k = guarded_kernel("cpu_guarded", 300, false);
  auto old = guarded_kernel("cpu_guarded", 100, false);
  old.name = "cpu_guarded@1.0.0";
  auto o = quick();
  o.extra_cases = {softmax_case(2, 300), softmax_case(2, 301)};
  o.timed_cases = {{softmax_case(64, 256), 3}, {softmax_case(64, 1000), 5}};
  const auto report = check_kernel(runner, k, o, &old);

  EXPECT_EQ(report.correctness.cases, 14);
  EXPECT_EQ(report.correctness.failed, 0)
      << (report.correctness.failures.empty() ? "" : report.correctness.failures[0].message);
  EXPECT_GT(report.correctness.fallback, 0);
  EXPECT_LT(report.correctness.fallback, report.correctness.cases);
  // Both sides of the guard ran: no coverage warning. (A speed warning may appear: an undecided
  // comparison on a loaded 2-core machine says so, and that is timing, not what this test checks.)
  for (const auto& w : report.correctness.warnings)
    EXPECT_EQ(w.find("outside the guard of 'cpu_guarded'"), std::string::npos) << w;

  EXPECT_EQ(report.baseline, "cpu_guarded@1.0.0");
  ASSERT_TRUE(report.baseline_correctness.has_value());
  EXPECT_EQ(report.baseline_correctness->cases, 14);
  EXPECT_EQ(report.baseline_correctness->failed, 0);
  EXPECT_GT(report.baseline_correctness->fallback,
            report.correctness.fallback);  // its guard is narrower

  // Each timed case against eager and against the baseline; the one outside the guard skipped.
  ASSERT_EQ(report.speed.size(), 4u);
  EXPECT_EQ(report.speed[0].baseline, "eager");
  EXPECT_EQ(report.speed[1].baseline, "cpu_guarded@1.0.0");
  EXPECT_NE(report.speed[0].decision, Outcome::skipped);
  EXPECT_EQ(report.speed[2].decision, Outcome::skipped);
  EXPECT_EQ(report.speed[3].decision, Outcome::skipped);
  EXPECT_EQ(report.workload_variants, 2);
  EXPECT_EQ(report.workload_calls, 8);
  ASSERT_TRUE(report.workload_speedup_vs_eager.has_value());
  ASSERT_TRUE(report.workload_speedup_vs_baseline.has_value());
  // Only the measured variant counts: the speedup is its median ratio.
  EXPECT_DOUBLE_EQ(*report.workload_speedup_vs_eager,
                   report.speed[0].baseline_median_ns / report.speed[0].candidate_median_ns);
}

TEST(PackageFallback, OneSidedCaseSetsAreFlagged) {
  Runner runner(Backend::cpu);
  auto o = quick();
  o.cases = 4;
  o.families = {"random"};
  o.speed = false;
  auto everything = guarded_kernel("cpu_everything", 1 << 30, false);
  auto r = check_kernel(runner, everything, o);
  ASSERT_EQ(r.correctness.warnings.size(), 1u);
  EXPECT_EQ(r.correctness.warnings[0],
            "no case fell outside the guard of 'cpu_everything': the fallback side was not tested");
  auto nothing = guarded_kernel("cpu_nothing", 0, false);
  r = check_kernel(runner, nothing, o);
  ASSERT_EQ(r.correctness.warnings.size(), 1u);
  EXPECT_EQ(r.correctness.warnings[0],
            "every case fell outside the guard of 'cpu_nothing': the kernel itself never ran");
  // Nothing was shown: never a pass (exit 3 whatever the policy).
  EXPECT_EQ(r.outcome, Outcome::unchecked);
  RunReport run;
  run.kernels = {r};
  EXPECT_EQ(run.exit_code(false), ExitCode::inconclusive);
  // A guard whose boundary cases all fall inside it (none is guard_outside) admits every case of
  // the op: no fallback side, no warning. One guard_outside case brings the warning back.
  Case inside = correctness_cases(everything, o).front();
  inside.family = "guard_inside";
  o.extra_cases = {inside};
  r = check_kernel(runner, everything, o);
  EXPECT_TRUE(r.correctness.warnings.empty()) << r.correctness.warnings.front();
  Case outside = inside;
  outside.family = "guard_outside";
  o.extra_cases.push_back(outside);
  r = check_kernel(runner, everything, o);
  ASSERT_EQ(r.correctness.warnings.size(), 1u);
  EXPECT_EQ(r.correctness.warnings[0],
            "no case fell outside the guard of 'cpu_everything': the fallback side was not tested");
}

TEST(PackageFallback, WorkloadSpeedupIsCallWeighted) {
  auto cmp = [](const Case& c, const std::string& baseline, double base_ns, double cand_ns,
                Outcome d) {
    SpeedComparison s;
    s.kcase = c;
    s.baseline = baseline;
    s.baseline_median_ns = base_ns;
    s.candidate_median_ns = cand_ns;
    s.decision = d;
    return s;
  };
  const Case a = softmax_case(8, 128), b = softmax_case(8, 256), c = softmax_case(8, 512);
  const std::vector<SpeedComparison> speed = {
      cmp(a, "eager", 100, 50, Outcome::passed),
      cmp(b, "eager", 300, 300, Outcome::passed),
      cmp(c, "eager", 1000, 10, Outcome::invalid),
      cmp(a, "old", 80, 50, Outcome::passed),
  };
  const std::vector<WeightedCase> w = {{a, 3}, {b, 1}, {c, 100}};
  // (3*100 + 1*300) / (3*50 + 1*300): the invalid one is left out.
  EXPECT_DOUBLE_EQ(*workload_speedup(speed, w, "eager"), 600.0 / 450.0);
  EXPECT_DOUBLE_EQ(*workload_speedup(speed, w, "old"), 80.0 / 50.0);
  EXPECT_FALSE(workload_speedup(speed, w, "nobody").has_value());
  EXPECT_FALSE(workload_speedup(speed, {{a, 0}}, "eager").has_value());
}

TEST(PackageFallback, ReportFieldsRoundTrip) {
  RunReport r;
  KernelReport k;
  k.name = "softmax_v2";
  k.op = "softmax";
  k.correctness.cases = 10;
  k.correctness.passed = 10;
  k.correctness.fallback = 4;
  CaseResult f;
  f.kcase = softmax_case(1, 2);
  f.outcome = Outcome::failed;
  f.fallback = true;
  k.correctness.failures.push_back(f);
  k.baseline = "softmax_v1@1.0.0";
  k.baseline_source = "/pkgs/v1";
  k.baseline_correctness = CorrectnessReport{};
  k.baseline_correctness->cases = 10;
  k.baseline_correctness->failed = 2;
  k.workload_variants = 3;
  k.workload_calls = 9000;
  k.workload_speedup_vs_eager = 1.25;
  r.kernels.push_back(k);
  const auto j = to_json(r);
  EXPECT_EQ(j["kernels"][0]["correctness"]["fallback"], 4);
  EXPECT_EQ(j["kernels"][0]["correctness"]["failures"][0]["fallback"], true);
  EXPECT_EQ(j["kernels"][0]["baseline"]["name"], "softmax_v1@1.0.0");
  EXPECT_EQ(j["kernels"][0]["workload"]["speedup_vs_eager"], 1.25);
  EXPECT_TRUE(j["kernels"][0]["workload"]["speedup_vs_baseline"].is_null());
  const auto back = report_from_json(j);
  const auto& b = back.kernels.at(0);
  EXPECT_EQ(b.correctness.fallback, 4);
  EXPECT_TRUE(b.correctness.failures.at(0).fallback);
  EXPECT_EQ(b.baseline, "softmax_v1@1.0.0");
  EXPECT_EQ(b.baseline_source, "/pkgs/v1");
  ASSERT_TRUE(b.baseline_correctness.has_value());
  EXPECT_EQ(b.baseline_correctness->failed, 2);
  EXPECT_EQ(b.workload_variants, 3);
  EXPECT_EQ(b.workload_calls, 9000);
  EXPECT_EQ(b.workload_speedup_vs_eager, std::optional<double>(1.25));
  EXPECT_FALSE(b.workload_speedup_vs_baseline.has_value());
  // A kernel without these fields has none of the new keys but "fallback" counters.
  RunReport plain;
  plain.kernels.push_back(KernelReport{});
  const auto pj = to_json(plain);
  EXPECT_FALSE(pj["kernels"][0].contains("baseline"));
  EXPECT_FALSE(pj["kernels"][0].contains("workload"));
}

TEST(PackageFallback, PackagesReplayWithTheirDirectory) {
  KernelInfo k;
  k.name = "softmax_v2_fast";
  k.source = "/work/pkgs/softmax_v2_fast";
  k.package = true;
  const Case c = softmax_case(1, 7);
  EXPECT_EQ(repro_command(k, c),
            "kgate replay --package '/work/pkgs/softmax_v2_fast' '" + c.id() + "'");
  k.package = false;
  EXPECT_EQ(repro_command(k, c), "kgate replay --kernel softmax_v2_fast '" + c.id() + "'");
}

}  // namespace
}  // namespace kgate
