// The end of a run, shared by check, merge and calibrate's callers: the console table, the report files
// (report.json, junit.xml, summary.md, report.html) and the exit code; reading a report back.
#include "cli/report_files.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/output.hpp"
#include "core/error.hpp"
#include "core/html_report.hpp"
#include "core/report_text.hpp"
#include "core/safe_text.hpp"
#include "runtime/pipeline.hpp"

namespace kgate::cli {
namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string fmt(const char* spec, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

std::string git_sha() {
  if (!env("GITHUB_SHA").empty()) return env("GITHUB_SHA");
  FILE* p = popen("git rev-parse HEAD 2>/dev/null", "r");  // fixed command, no user input
  if (!p) return "";
  char buf[64] = {0};
  const bool ok = std::fgets(buf, sizeof buf, p) != nullptr;
  pclose(p);
  std::string s = ok ? buf : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

namespace {

/// The slowest measured comparison of `k` against `baseline` (nullptr: none).
const SpeedComparison* worst_against(const KernelReport& k, const std::string& baseline) {
  const SpeedComparison* worst = nullptr;
  for (const auto& s : k.speed)
    if (s.baseline == baseline && s.decision != Outcome::skipped && (!worst || s.ratio > worst->ratio)) worst = &s;
  if (!worst)  // every comparison skipped: show one of them
    for (const auto& s : k.speed)
      if (s.baseline == baseline) return &s;
  return worst;
}

std::string speed_cell(const KernelReport& k) {
  const SpeedComparison* worst = worst_against(k, "eager");
  if (!worst) return "-";
  return speed_words(worst->ratio) + ", " + outcome_name(worst->decision);
}

std::string speedup_text(const std::optional<double>& v) { return v ? speedup_words(*v) : "-"; }

}  // namespace

void print_table(const RunReport& report) {
  std::vector<std::vector<std::string>> rows = {{"kernel", "op", "backend", "correctness", "margin", "speed vs eager (worst)"}};
  for (const auto& k : report.kernels)
    rows.push_back({k.name, k.op, k.backend, correctness_cell(k), fmt("%.3f", k.correctness.worst_margin), speed_cell(k)});
  const auto widths = column_widths(rows);
  std::printf("\n%s\n", aligned_row(rows.front(), widths).c_str());
  size_t row = 0;
  for (const auto& k : report.kernels) {
    std::printf("%s\n", aligned_row(rows[++row], widths).c_str());
    if (k.correctness.fallback > 0)
      std::printf("  %s: %lld of %lld cases outside its guard ran the reference (fallback)\n", k.name.c_str(),
                  static_cast<long long>(k.correctness.fallback), static_cast<long long>(k.correctness.cases));
    for (const auto& r : k.correctness.captured)
      std::printf("  %s: captured inputs %s: %s%s\n", k.name.c_str(), inline_untrusted(r.kcase.captured).c_str(),
                  outcome_name(r.outcome),
                  r.outcome == Outcome::passed ? fmt(" (margin %.3f)", r.margin).c_str()
                                               : (" [" + r.rule + "] " + inline_untrusted(r.message, 300)).c_str());
    if (!k.baseline.empty()) {
      std::string line = "  " + k.name + " vs baseline " + k.baseline + ":";
      if (k.baseline_correctness)
        line += " baseline correctness " + std::to_string(k.baseline_correctness->passed) + "/" +
                std::to_string(k.baseline_correctness->cases) + ";";
      const SpeedComparison* worst = worst_against(k, k.baseline);
      line += worst ? " speed (worst) " + speed_words(worst->ratio) + ", " + outcome_name(worst->decision)
                    : std::string(" speed not measured");
      std::printf("%s\n", line.c_str());
    }
    if (k.workload_variants > 0) {
      std::string line = "  " + k.name + " workload (" + std::to_string(k.workload_variants) + " variants, " +
                         std::to_string(k.workload_calls) + " calls): " +
                         speedup_text(k.workload_speedup_vs_eager) + " than eager";
      if (!k.baseline.empty()) line += ", " + speedup_text(k.workload_speedup_vs_baseline) + " than " + k.baseline;
      std::printf("%s\n", line.c_str());
    }
  }
  for (const auto& k : report.kernels) {
    for (const auto& s : k.speed) {
      if (s.decision == Outcome::unchanged || s.decision == Outcome::skipped || s.blocks == 0) {
        // Not timed: no figures, the note says why.
        std::printf("  %s %s: %s — %s\n", k.name.c_str(), s.kcase.id().c_str(), outcome_name(s.decision), s.note.c_str());
        continue;
      }
      std::printf("  %s %s: %s than %s (time ratio %.3f [%.3f, %.3f]; %.1f us vs %.1f us, %lld blocks, %s) %s%s\n",
                  k.name.c_str(), s.kcase.id().c_str(), speed_words(s.ratio).c_str(), s.baseline.c_str(), s.ratio,
                  s.ratio_lower, s.ratio_upper, s.candidate_median_ns / 1e3, s.baseline_median_ns / 1e3,
                  static_cast<long long>(s.blocks), s.timer.c_str(), outcome_name(s.decision),
                  s.note.empty() ? "" : (" — " + s.note).c_str());
    }
    if (k.correctness.minimal) {
      const auto& m = *k.correctness.minimal;
      std::printf("\nFAILED %s: %s\n  minimal case: %s\n  repro: %s\n", k.name.c_str(), m.message.c_str(),
                  m.kcase.id().c_str(), m.repro.c_str());
    }
    if (!k.message.empty() && k.outcome != Outcome::passed) std::printf("  %s: %s\n", k.name.c_str(), k.message.c_str());
  }
  std::string twins;  // one line for all of them
  for (const auto& k : report.kernels)
    for (const auto& w : k.correctness.warnings) {
      if (w.find(kTwinNotTimed) != std::string::npos)
        twins += (twins.empty() ? "" : ", ") + k.name;
      else
        std::printf("  warning (%s): %s\n", k.name.c_str(), w.c_str());
    }
  if (!twins.empty())
    std::printf("  not timed (correctness twins for the mutant suite, not deployment candidates): %s\n", twins.c_str());
}

RunReport load_report(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw_usage("cannot read " + path + ": no such file, or not readable");
  nlohmann::json j;
  try {
    f >> j;
  } catch (const std::exception& e) {
    throw_usage(path + ": not valid JSON: " + e.what());
  }
  try {
    return report_from_json(j);
  } catch (const Error& e) {
    throw_usage(path + ": " + e.what());
  }
}

/// report.json, junit.xml, summary.md and report.html under `out`, each written whole.
void write_report_files(const RunReport& report, const fs::path& out) {
  write_file_atomically(out / "report.json", to_json(report).dump(2) + "\n");
  std::ostringstream junit, md;
  write_junit(junit, report);
  write_markdown(md, report);
  write_file_atomically(out / "junit.xml", junit.str());
  write_file_atomically(out / "summary.md", md.str());
  write_file_atomically(out / "report.html", render_html(report));
}

/// The end of a run (kgate check, kgate merge): the multiple-comparison correction over every
/// comparison, the reports, the table, GitHub annotations and step summary; returns the exit code.
int conclude(RunReport& report, const std::string& out_dir, bool inconclusive_fails) {
  // The policy every writer follows (JUnit, the summary, the annotations agree with the exit code).
  report.meta.config["inconclusive_fails"] = inconclusive_fails;
  adjust_speed_decisions(report.kernels);
  write_report_files(report, out_dir);
  print_table(report);
  if (!env("GITHUB_ACTIONS").empty()) write_github_annotations(std::cout, report);
  if (!env("GITHUB_STEP_SUMMARY").empty()) {
    std::ofstream summary(env("GITHUB_STEP_SUMMARY"), std::ios::app);
    write_markdown(summary, report);
  }
  if (!report.google_benchmark.empty()) {
    size_t entries = 0;
    for (const auto& g : report.google_benchmark) entries += g.benchmarks.size();
    std::printf("\ngoogle benchmark: %zu file(s), %zu entries kept in report.json (informational)\n",
                report.google_benchmark.size(), entries);
  }
  const auto code = report.exit_code(inconclusive_fails);
  std::printf("\nreports: %s/report.json, junit.xml, summary.md, report.html — exit %d\n", out_dir.c_str(),
              static_cast<int>(code));
  return static_cast<int>(code);
}

}  // namespace kgate::cli
