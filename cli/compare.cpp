// kgate compare: two runs' reports, kernel by kernel; exit code for what got worse.
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/output.hpp"
#include "cli/report_files.hpp"
#include "core/error.hpp"
#include "core/report.hpp"
#include "report/text.hpp"

namespace kgate::cli {

namespace {
/// How bad an outcome is for `kgate compare`: passing ones (passed, fragile, inconclusive,
/// skipped) are 0; then invalid, regressed, failed.
int severity(Outcome o) {
  switch (o) {
    case Outcome::invalid:
      return 1;
    case Outcome::regressed:
      return 2;
    case Outcome::failed:
      return 3;
    default:
      return 0;
  }
}
ExitCode exit_for(Outcome o) {
  switch (o) {
    case Outcome::failed:
      return ExitCode::correctness;
    case Outcome::regressed:
      return ExitCode::regression;
    default:
      return ExitCode::inconclusive;
  }
}
}  // namespace

CLI::App* add_compare_command(CLI::App& app, CompareArgs& args) {
  auto* cmd = app.add_subcommand("compare", "Compare two kgate reports (old.json new.json)");
  cmd->add_option("old", args.old_report, "Earlier report")->required()->check(CLI::ExistingFile);
  cmd->add_option("new", args.new_report, "Later report")->required()->check(CLI::ExistingFile);
  return cmd;
}

int run_compare(const CompareArgs& args) {
  const auto old_report = load_report(args.old_report);
  const auto new_report = load_report(args.new_report);
  // Absolute times from two runs are not comparable without an A/A calibration: compare the
  // in-run ratios against eager, and the outcomes. A kernel got worse when its outcome is worse
  // than before (fragile -> failed, passed -> invalid, ...), when it is new and not passing, or
  // when it is missing from the new report; the exit code is the worst of them (1 correctness or
  // missing, 2 speed, 3 invalid), 0 when none got worse.
  auto worst_ratio = [](const KernelReport* k) {
    double r = 0;
    if (k)
      for (const auto& s : k->speed)
        if (s.baseline == "eager" && s.decision != Outcome::skipped) r = std::max(r, s.ratio);
    return r;
  };
  std::vector<std::vector<std::string>> rows = {
      {"kernel", "old", "new", "old x eager", "new x eager", ""}};
  int worse = 0;
  ExitCode code = ExitCode::ok;
  auto count = [&](ExitCode c) {
    ++worse;
    if (code == ExitCode::ok || static_cast<int>(c) < static_cast<int>(code)) code = c;
  };
  for (const auto& nk : new_report.kernels) {
    const KernelReport* ok = nullptr;
    for (const auto& k : old_report.kernels)
      if (k.name == nk.name) ok = &k;
    const double ro = worst_ratio(ok), rn = worst_ratio(&nk);
    std::string verdict;
    if (ok && severity(nk.outcome) > severity(ok->outcome)) {
      verdict = "worse";
      count(exit_for(nk.outcome));
    } else if (!ok && severity(nk.outcome) > 0) {
      verdict = "new, not passing";
      count(exit_for(nk.outcome));
    }
    rows.push_back({nk.name, ok ? outcome_name(ok->outcome) : "(new)", outcome_name(nk.outcome),
                    ro > 0 ? speed_words(ro) : "-", rn > 0 ? speed_words(rn) : "-", verdict});
  }
  for (const auto& k : old_report.kernels) {
    bool present = false;
    for (const auto& nk : new_report.kernels) present |= nk.name == k.name;
    if (present) continue;
    rows.push_back(
        {k.name, outcome_name(k.outcome), "(missing)", "-", "-", "missing from the new report"});
    count(ExitCode::correctness);
  }
  const auto widths = column_widths(rows);
  for (const auto& r : rows) std::printf("%s\n", aligned_row(r, widths).c_str());
  std::printf("\n%d kernel(s) got worse\n", worse);
  return static_cast<int>(code);
}

}  // namespace kgate::cli
