// Every report writer on fixed results, byte for byte against tests/core/golden/: the outputs a
// restructuring of the writers must leave unchanged. KGATE_UPDATE_GOLDEN=1 writes them anew (then
// review the diff: a changed golden is a changed contract or a changed page).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/report.hpp"
#include "report/writers.hpp"

namespace kgate {
namespace {

namespace fs = std::filesystem;

SpeedComparison comparison(const std::string& baseline, Outcome decision, double ratio,
                           int samples) {
  SpeedComparison s;
  s.baseline = baseline;
  s.kcase = Case::from_id("softmax:f32:B=4096,N=1024:contiguous:normal:0000000000000001");
  s.decision = decision;
  s.timer = "cupti";
  s.ratio = ratio;
  s.ratio_lower = ratio * 0.99;
  s.ratio_upper = ratio * 1.01;
  s.p_value = decision == Outcome::regressed ? 0.001 : 0.5;
  s.p_adjusted = decision == Outcome::regressed ? 0.004 : 1;
  s.blocks = 30;
  s.dropped_blocks = 1;
  s.baseline_median_ns = 10000;
  s.candidate_median_ns = 10000 * ratio;
  for (int i = 0; i < samples; ++i) {
    s.baseline_ns.push_back(10000.0 + static_cast<double>(i % 7) * 50);
    s.candidate_ns.push_back(10000.0 * ratio + static_cast<double>(i % 11) * 40);
  }
  s.checked_launches = {{0, 1, 3}, {1, 1, 0}};
  s.candidate_kernels = {"softmax_rows<<<4096, 256>>>"};
  s.sm_clock_min_mhz = 1980;
  s.sm_clock_max_mhz = 1980;
  s.sol_read_bytes = 16777216;
  s.sol_written_bytes = 16777216;
  s.sol_ceiling_bytes_per_s = 4.1e12;
  s.sol_candidate_fraction = 0.82;
  s.sol_enforced = true;
  s.seconds = 1.5;
  return s;
}

CaseResult failure(const std::string& id, Reason rule, double margin, const std::string& message) {
  CaseResult f;
  f.kcase = Case::from_id(id);
  f.outcome = Outcome::failed;
  f.rule = rule;
  f.margin = margin;
  f.observed = 0.25;
  f.allowed = 0.125;
  f.message = message;
  f.repro = "kgate replay --kernel k '" + f.kcase.id() + "'";
  return f;
}

// Every outcome a kernel can have, with what each writer shows of it.
RunReport fixed_report() {
  RunReport r;
  r.meta.kgate_version = "0.1.0";
  r.meta.backend = "cuda";
  r.meta.device = "NVIDIA H200";
  r.meta.driver = "550.54.15";
  r.meta.cuda = "13.0";
  r.meta.torch = "2.11.0";
  r.meta.started_at = "2026-12-03T04:00:00Z";
  r.meta.seconds = 42.5;
  r.meta.seed = 7;
  r.meta.git_sha = "0123456789abcdef0123";
  r.meta.command = "kgate check --out reports";
  r.meta.config = {{"delta", 0.02}, {"alpha", 0.05}};

  KernelReport passed;
  passed.name = "softmax_block";
  passed.op = "softmax";
  passed.backend = "cuda";
  passed.source = "kernels/softmax/softmax_block.cu";
  passed.correctness.cases = 64;
  passed.correctness.passed = 64;
  passed.correctness.worst_margin = 0.31;
  passed.correctness.behaviour_checks = 12;
  passed.speed.push_back(comparison("eager", Outcome::passed, 0.62, 40));
  passed.seconds = 3.25;

  KernelReport failed;
  failed.name = "softmax_tail";
  failed.op = "softmax";
  failed.backend = "cuda";
  failed.source = "tests/mutants/softmax_tail_dropped.cu";
  failed.outcome = Outcome::failed;
  failed.correctness.cases = 64;
  failed.correctness.passed = 40;
  failed.correctness.failed = 24;
  failed.correctness.worst_margin = INFINITY;
  failed.correctness.failures.push_back(
      failure("softmax:f32:B=1,N=33:contiguous:normal:0000000000000002", Reason::memory, INFINITY,
              "1 of 33 output elements were never written\nsecond line"));
  failed.correctness.failures.push_back(
      failure("softmax:bf16:B=3,N=257:padded:normal:0000000000000003", Reason::eager_relative, 2.0,
              "3 of 771 elements <off> & \"quoted\""));
  failed.correctness.minimal = failed.correctness.failures.front();
  failed.correctness.faulted = {"softmax:f32:B=9,N=5:contiguous:normal:0000000000000004"};

  KernelReport regressed;
  regressed.name = "rms_norm_block";
  regressed.op = "rms_norm";
  regressed.backend = "cuda";
  regressed.outcome = Outcome::regressed;
  regressed.correctness.cases = 64;
  regressed.correctness.passed = 64;
  regressed.correctness.worst_margin = 0.85;
  regressed.correctness.warnings.push_back("FRAGILE: passes with a worst margin of 0.85");
  regressed.speed.push_back(comparison("eager", Outcome::regressed, 1.046, 30));
  regressed.speed.push_back(comparison("rms_norm_rows@1.0.0", Outcome::inconclusive, 1.01, 20));
  regressed.baseline = "rms_norm_rows@1.0.0";
  regressed.workload_speedup_vs_eager = 0.95;
  regressed.workload_variants = 2;
  regressed.workload_calls = 300;

  KernelReport invalid;
  invalid.name = "attention_op";
  invalid.op = "attention";
  invalid.backend = "cuda";
  invalid.outcome = Outcome::invalid;
  invalid.correctness.cases = 64;
  invalid.correctness.passed = 60;
  invalid.correctness.reference_errors = 4;
  invalid.correctness.fallback = 6;
  invalid.correctness.reference_faulted = {
      "attention:f32:B=1,H=1,S=13,L=13,D=8:padded:normal:0000000000000005"};
  invalid.correctness.warnings.push_back(
      "4 of 64 cases could not be judged: the op's reference failed on them");

  KernelReport skipped;
  skipped.name = "softmax_cpu";
  skipped.op = "softmax";
  skipped.backend = "cpu";
  skipped.outcome = Outcome::skipped;
  skipped.message = "no correctness case applies";
  skipped.worker_output = "[1/1] softmax_cpu\n";
  skipped.worker_output_bytes = 18;

  r.kernels = {passed, failed, regressed, invalid, skipped};
  return r;
}

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
  const std::string want = read(path);
  EXPECT_EQ(text, want) << name << " differs from " << path
                        << " (KGATE_UPDATE_GOLDEN=1 rewrites it)";
}

TEST(ReportGolden, Json) { expect_golden("report.json", to_json(fixed_report()).dump(2) + "\n"); }

TEST(ReportGolden, Junit) {
  std::ostringstream os;
  write_junit(os, fixed_report());
  expect_golden("junit.xml", os.str());
}

TEST(ReportGolden, JunitWhenInconclusiveFails) {
  RunReport r = fixed_report();
  r.meta.config["inconclusive_fails"] = true;
  std::ostringstream os;
  write_junit(os, r);
  expect_golden("junit_inconclusive_fails.xml", os.str());
}

TEST(ReportGolden, Markdown) {
  std::ostringstream os;
  write_markdown(os, fixed_report());
  expect_golden("summary.md", os.str());
}

TEST(ReportGolden, GithubAnnotations) {
  std::ostringstream os;
  write_github_annotations(os, fixed_report());
  expect_golden("annotations.txt", os.str());
}

TEST(ReportGolden, ConsoleTable) {
  std::ostringstream os;
  write_console_table(os, fixed_report());
  expect_golden("console.txt", os.str());
}

TEST(ReportGolden, TheFileWritersAreTheFormatsWriters) {
  // report::file_writers() writes exactly what each format's function writes, to its file name.
  const RunReport r = fixed_report();
  std::vector<std::string> names;
  for (const report::Writer<RunReport>* w : report::file_writers()) {
    std::ostringstream os;
    w->write(os, r);
    names.push_back(w->file_name());
    const std::string golden = w->file_name() == "summary.md" ? "summary.md" : w->file_name();
    expect_golden(golden, os.str());
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"report.json", "junit.xml", "summary.md", "report.html"}));
}

TEST(ReportGolden, Html) { expect_golden("report.html", render_html(fixed_report())); }

TEST(ReportGolden, JsonReadsBackToTheSameJson) {
  const nlohmann::json j = to_json(fixed_report());
  EXPECT_EQ(to_json(report_from_json(j)).dump(2), j.dump(2));
}

}  // namespace
}  // namespace kgate
