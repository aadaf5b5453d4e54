// kgate sweep's and kgate calibrate's writers on fixed models, byte for byte against
// tests/core/golden/: sweep.json, sweep.md, sweep.html, the sweep's console table, calibrate.json
// and calibrate's console report as the verbs write them (a change of these files is a changed
// contract or a changed page). KGATE_UPDATE_GOLDEN=1 writes them anew (then review the diff). And
// every verb's writer list: its formats, its files, each writer the same bytes as its format's
// function.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "report/calibration.hpp"
#include "report/sweep.hpp"
#include "report/writers.hpp"

namespace kgate {
namespace {

namespace fs = std::filesystem;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void expect_golden(const std::string& name, const std::string& text) {
  const fs::path path = fs::path(KGATE_SOURCE_DIR) / "tests/core/golden" / name;
  if (const char* update = std::getenv("KGATE_UPDATE_GOLDEN");
      update && std::string(update) == "1") {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
  }
  ASSERT_TRUE(fs::exists(path)) << path << " is missing (KGATE_UPDATE_GOLDEN=1 writes it)";
  EXPECT_EQ(text, read(path)) << name << " differs from " << path
                              << " (KGATE_UPDATE_GOLDEN=1 rewrites it)";
}

nlohmann::ordered_json fixed_meta(const std::string& command) {
  return {{"kgate_version", "0.1.0"},
          {"command", command},
          {"backend", "cuda"},
          {"device", "NVIDIA H200"},
          {"driver", "550.54.15"},
          {"cuda", "13.0"},
          {"torch", "2.11.0"},
          {"started_at", "2026-12-03T04:00:00Z"},
          {"seed", 7},
          {"seconds", 12.5}};
}

/// A dtype's sweep on the default grid (6 rtols x 6 atols, 5 scales), its figures scaled by `k`.
SweptDtype swept(DType dtype, const std::string& verdict, double worst_margin, double k) {
  const sensitivity::SweepGrid grid;
  SweptDtype d;
  auto& s = d.sweep;
  s.dtype = dtype;
  s.rule = "allclose";
  s.atol = d.atol = 1.2345e-5;
  s.rtol = d.rtol = 1.3e-3;
  s.cases = 64;
  s.verdict = verdict;
  s.fragile = verdict == "FRAGILE";
  s.worst_margin = worst_margin;
  s.max_abs = {1e-7 * k, 2.5e-7 * k, 4e-7 * k, 6.125e-7 * k};
  s.max_rel = {1e-4 * k, 3e-4 * k, 5e-4 * k, 9e-4 * k};
  s.margin = {0.1 * k, 0.3 * k, 0.5 * k, std::isfinite(worst_margin) ? worst_margin : 0.9};
  for (size_t r = 0; r < grid.rtols.size(); ++r) {
    std::vector<double> row;
    for (size_t a = 0; a < grid.atols.size(); ++a)
      row.push_back(a < 3 + r % 2 ? 1.0 : 1.0 / static_cast<double>(a + 1 + r));
    s.pass_rate.push_back(row);
    s.frontier_atol.push_back(r == 5 && verdict == "FAILED" ? kInf : 1e-4 * (1 + r) * k);
  }
  s.scale_pass_rate = {0.25, 0.5, verdict == "FAILED" ? 0.875 : 1.0, 1, 1};
  d.worst_case = "softmax:" + std::string(dtype_name(dtype)) +
                 ":B=3,N=1000:contiguous:normal:0000000000000002";
  d.worst_repro = "kgate replay --kernel k '" + d.worst_case + "'";
  d.worst_message = "max |out - ref| 3e-05 > atol + rtol * |ref| at [2, 17] <&>";
  d.worst_margin = worst_margin;
  return d;
}

/// Every verdict a sweep row can have: ok, FRAGILE, FAILED with failures as accurate as eager,
/// and a worker that left no result (hard, infinite margin); names that need escaping.
SweepReport fixed_sweep() {
  SweepReport r;
  r.meta = fixed_meta("kgate sweep --out reports");
  SweptKernel a{"softmax_block", "softmax", "cuda", "kernels/softmax/softmax_block.cu", 0, 0.8, {}};
  a.dtypes.push_back(swept(DType::f32, "ok", 0.42, 1));
  a.dtypes.push_back(swept(DType::bf16, "FRAGILE", 0.875, 3));
  SweptKernel b{"softmax<tail>&co", "softmax", "cuda", "pkgs/tail", 5, 0.7, {}};
  SweptDtype failed = swept(DType::f16, "FAILED", 2.5, 10);
  failed.sweep.failed = 8;
  failed.as_accurate_as_eager = 3;
  b.dtypes.push_back(failed);
  SweptDtype hard = swept(DType::f32, "FAILED", kInf, 1);
  hard.sweep.rule = "-";
  hard.sweep.failed = 1;
  hard.sweep.hard_failures = 1;
  hard.worst_case = "-";
  hard.worst_repro = "";
  hard.worst_message = "kernel 'softmax<tail>&co': the worker exited with code 139";
  b.dtypes.push_back(hard);
  r.kernels = {a, b};
  return r;
}

AaRun aa_run(Outcome decision, double ratio, double spread, double seconds) {
  AaRun run;
  SpeedComparison& c = run.comparison;
  c.decision = decision;
  c.ratio = ratio;
  c.ratio_lower = ratio - spread;
  c.ratio_upper = ratio + spread;
  c.p_value = decision == Outcome::regressed ? 0.01 : 0.5;
  c.blocks = 24;
  c.dropped_blocks = 1;
  c.baseline_median_ns = 10250.5;
  c.candidate_median_ns = 10250.5 * ratio;
  c.check_seconds = 0.125;
  c.checks_judged = 2;
  c.timer = "cupti";
  run.noise.cv = 0.0125 * ratio;
  run.noise.block_sd = 0.003 * spread * 100;
  run.checked_launches = 24;
  run.seconds = seconds;
  return run;
}

/// Two kernels: one finished with two speed cases (a regression among passes, an inconclusive
/// one, an invalid one with an unbounded ratio), one whose worker stopped after a case.
CalibrationReport fixed_calibration(bool finished) {
  CalibrationReport r;
  r.meta = fixed_meta("kgate calibrate --comparisons 3");
  r.meta["config"] = {{"comparisons", 3}, {"delta", 0.02}, {"alpha", 0.05}, {"flush_l2", true}};
  CalibratedKernel a{"softmax_block", "softmax", "cuda", {}, "", true};
  a.cases.push_back(
      {Case::from_id("softmax:f32:B=4096,N=1024:contiguous:normal:0000000000000001"),
       {aa_run(Outcome::passed, 1.001, 0.004, 1.5), aa_run(Outcome::regressed, 1.031, 0.005, 1.25),
        aa_run(Outcome::passed, 0.998, 0.003, 1.75)}});
  AaRun unbounded = aa_run(Outcome::invalid, 1.0, 0.01, 0.5);
  unbounded.comparison.ratio_upper = kInf;
  unbounded.comparison.check_seconds = kNaN;
  unbounded.comparison.note = "too few blocks for a bound";
  a.cases.push_back({Case::from_id("softmax:bf16:B=8,N=65536:contiguous:normal:0000000000000003"),
                     {aa_run(Outcome::inconclusive, 1.01, 0.02, 2.0), unbounded}});
  CalibratedKernel b{"softmax_tail", "softmax", "cuda", {}, "", finished};
  b.cases.push_back({Case::from_id("softmax:f32:B=3,N=1000:contiguous:normal:0000000000000002"),
                     {aa_run(Outcome::passed, 1.0, 0.002, 0.25)}});
  if (finished)
    b.error =
        "kernel 'softmax_tail': the worker exited with code 139 (1 speed case(s) finished before "
        "it are kept)";
  r.kernels = {a, b};
  return r;
}

TEST(VerbWritersGolden, SweepJson) {
  std::ostringstream os;
  write_sweep_json(os, fixed_sweep());
  expect_golden("sweep.json", os.str());
}

TEST(VerbWritersGolden, SweepMarkdown) {
  std::ostringstream os;
  write_sweep_markdown(os, fixed_sweep());
  expect_golden("sweep.md", os.str());
}

TEST(VerbWritersGolden, SweepHtml) {
  std::ostringstream os;
  write_sweep_html(os, fixed_sweep());
  expect_golden("sweep.html", os.str());
}

TEST(VerbWritersGolden, SweepConsole) {
  std::ostringstream os;
  write_sweep_console(os, fixed_sweep());
  expect_golden("sweep_console.txt", os.str());
}

TEST(VerbWritersGolden, CalibrateJson) {
  std::ostringstream os;
  write_calibration_json(os, fixed_calibration(true));
  expect_golden("calibrate.json", os.str());
}

TEST(VerbWritersGolden, CalibrateJsonWhileAKernelRuns) {
  // Rewritten after every case: the kernel still running has its cases and no summary yet.
  std::ostringstream os;
  write_calibration_json(os, fixed_calibration(false));
  expect_golden("calibrate_partial.json", os.str());
}

TEST(VerbWritersGolden, CalibrateConsole) {
  std::ostringstream os;
  report::calibrate_console_writer().write(os, fixed_calibration(true));
  expect_golden("calibrate_console.txt", os.str());
}

TEST(VerbWritersGolden, SweepConsoleWriterIsTheTable) {
  std::ostringstream os;
  report::sweep_console_writer().write(os, fixed_sweep());
  expect_golden("sweep_console.txt", os.str());
}

template <class Model>
void expect_writers(const report::Writers<Model>& writers, const Model& model,
                    const std::vector<std::string>& formats, const std::vector<std::string>& files,
                    const std::vector<std::string>& goldens) {
  std::vector<std::string> got_formats, got_files;
  for (size_t i = 0; i < writers.size(); ++i) {
    got_formats.push_back(writers[i]->format());
    got_files.push_back(writers[i]->file_name());
    std::ostringstream os;
    writers[i]->write(os, model);
    if (i < goldens.size()) expect_golden(goldens[i], os.str());
  }
  EXPECT_EQ(got_formats, formats);
  EXPECT_EQ(got_files, files);
}

TEST(VerbWritersGolden, EveryVerbsWritersAreItsFormatsWriters) {
  expect_writers(report::sweep_writers(), fixed_sweep(), {"json", "md", "html"},
                 {"sweep.json", "sweep.md", "sweep.html"},
                 {"sweep.json", "sweep.md", "sweep.html"});
  expect_writers(report::calibrate_writers(), fixed_calibration(true), {"json"}, {"calibrate.json"},
                 {"calibrate.json"});
  // check's and merge's: the run report's (report_golden_test pins their bytes).
  std::vector<std::string> formats, files;
  for (const auto* w : report::file_writers()) {
    formats.push_back(w->format());
    files.push_back(w->file_name());
  }
  EXPECT_EQ(formats, (std::vector<std::string>{"json", "junit", "md", "html"}));
  EXPECT_EQ(files,
            (std::vector<std::string>{"report.json", "junit.xml", "summary.md", "report.html"}));
}

TEST(VerbWritersGolden, CalibrationSummariesReadTheirRuns) {
  const CalibrationReport r = fixed_calibration(true);
  std::vector<const AaRun*> runs;
  for (const auto& run : r.kernels[0].cases[0].runs) runs.push_back(&run);
  const auto s = summarize_runs(runs);
  EXPECT_EQ(s.comparisons, 3);
  EXPECT_EQ(s.valid, 3);
  EXPECT_EQ(s.regressions, 1);
  EXPECT_DOUBLE_EQ(median_of(runs, [](const AaRun& a) { return a.seconds; }), 1.5);
}

}  // namespace
}  // namespace kgate
