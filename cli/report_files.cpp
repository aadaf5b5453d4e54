// The end of a run, shared by check and merge: the console table, the report files (report.json,
// junit.xml, summary.md, report.html, as --format chooses) and the exit code; reading a report
// back; --format for every verb.
#include "cli/report_files.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/output.hpp"
#include "core/error.hpp"
#include "gates/speed/gate.hpp"
#include "report/writers.hpp"
#include "runtime/pipeline.hpp"

namespace kgate::cli {
namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
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

void print_table(const RunReport& report) { report::console_writer().write(std::cout, report); }

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

CLI::Option* add_format_option(CLI::App& cmd, std::vector<std::string>& formats,
                               const std::vector<std::string>& known) {
  std::string expected, all;
  for (size_t i = 0; i < known.size(); ++i) {
    expected += (i == 0 ? "" : i + 1 == known.size() ? " or " : ", ") + known[i];
    all += (all.empty() ? "" : ",") + known[i];
  }
  return add_name_list_option(cmd, {"--format", known, "format", "report format", all, "FORMAT"},
                              formats,
                              "Files to write under --out: " + expected +
                                  "; repeatable, or a comma list (default: all of them)");
}

/// The end of a run (kgate check, kgate merge): the multiple-comparison correction over every
/// comparison, the reports, the table, GitHub annotations and step summary; returns the exit code.
int conclude(RunReport& report, const std::string& out_dir, bool inconclusive_fails,
             const report::Writers<RunReport>& writers) {
  // The policy every writer follows (JUnit, the summary, the annotations agree with the exit code).
  report.meta.config["inconclusive_fails"] = inconclusive_fails;
  speed::apply_holm(report.kernels);
  write_files(writers, report, out_dir);
  print_table(report);
  if (!env("GITHUB_ACTIONS").empty()) report::annotations_writer().write(std::cout, report);
  if (!env("GITHUB_STEP_SUMMARY").empty()) {
    std::ofstream summary(env("GITHUB_STEP_SUMMARY"), std::ios::app);
    write_markdown(summary, report);
  }
  if (!report.google_benchmark.empty()) {
    size_t entries = 0;
    for (const auto& g : report.google_benchmark) entries += g.benchmarks.size();
    std::printf(
        "\ngoogle benchmark: %zu file(s), %zu entries kept in report.json (informational)\n",
        report.google_benchmark.size(), entries);
  }
  const auto code = report.exit_code(inconclusive_fails);
  std::printf("\nreports: %s — exit %d\n", file_list(writers, out_dir).c_str(),
              static_cast<int>(code));
  return static_cast<int>(code);
}

}  // namespace kgate::cli
