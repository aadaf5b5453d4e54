// summary.md: the run's outcome, one table row per kernel, then what failed and why (for
// $GITHUB_STEP_SUMMARY).
#include "report/writers.hpp"

#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "core/safe_text.hpp"
#include "report/text.hpp"

namespace kgate {

namespace {

// A pull-request run (kgate check --baseline-build): what regressed against the base first, then
// what changed, then what is UNCHANGED, new or removed.
void write_base_section(std::ostream& os, const RunReport& report) {
  if (report.meta.base.is_null()) return;
  const auto& b = report.meta.base;
  const std::string name = base_name(report);
  os << "### Against the base (`" << inline_untrusted(name == "base" ? b.value("dir", name) : name)
     << "`)\n\n";
  const std::string error = b.value("error", std::string());
  if (!error.empty()) {
    os << "**No base:** " << inline_untrusted(error)
       << ". Every kernel was gated against eager alone.\n\n";
    return;
  }
  std::vector<std::string> regressed, changed, unchanged, fresh;
  for (const auto& k : report.kernels) {
    if (!k.base.is_object()) continue;
    const std::string status = k.base.value("status", std::string());
    if (status == "new") {
      fresh.push_back("`" + k.name + "`");
      continue;
    }
    if (status == "unchanged") {
      unchanged.push_back("`" + k.name + "`");
      continue;
    }
    const SpeedComparison* worst = nullptr;
    for (const auto& s : k.speed)
      if (s.baseline == k.baseline && s.decision != Outcome::unchanged &&
          (!worst || s.ratio > worst->ratio))
        worst = &s;
    std::string line = "`" + k.name + "`";
    if (status == "base_failed")
      line += ": the base fails the head's cases, so the comparison is invalid";
    else if (worst)
      line += ": " + speed_words(worst->ratio) + " than base (δ " + format_percent(worst->delta) +
              "), " + outcome_name(worst->decision);
    (worst && worst->decision == Outcome::regressed ? regressed : changed).push_back(line);
  }
  const auto list = [&os](const char* title, const std::vector<std::string>& items) {
    if (items.empty()) return;
    os << "- **" << title << "**: ";
    for (size_t i = 0; i < items.size(); ++i) os << (i ? "; " : "") << items[i];
    os << "\n";
  };
  list("regressed", regressed);
  list("changed", changed);
  list("unchanged (not timed)", unchanged);
  list("new (gated against eager)", fresh);
  std::vector<std::string> removed;
  for (const auto& r : report.removed)
    removed.push_back("`" + inline_untrusted(r.value("name", std::string())) + "`");
  list("removed (informational)", removed);
  os << "\n";
}

}  // namespace

void write_markdown(std::ostream& os, const RunReport& report) {
  const auto code = report.exit_code(inconclusive_fails(report));
  os << "## kgate: "
     << (code == ExitCode::ok ? "all gates passed"
                              : "gate failed (exit " + std::to_string(static_cast<int>(code)) + ")")
     << "\n\n";
  os << "Device `" << report.meta.device << "`, backend `" << report.meta.backend << "`, seed `"
     << report.meta.seed << "`";
  if (!report.meta.git_sha.empty()) os << ", commit `" << report.meta.git_sha.substr(0, 12) << "`";
  os << ".\n\n";
  if (!report.not_checked.empty()) {
    os << "**Not checked by this run** (they fail nothing here; check them where they run):\n\n";
    for (const auto& n : report.not_checked)
      os << "- `" << inline_untrusted(n.value("name", std::string()))
         << "`: " << inline_untrusted(n.value("why", std::string())) << "; `"
         << inline_untrusted(n.value("command", std::string())) << "`\n";
    os << "\n";
  }
  write_base_section(os, report);
  os << "| kernel | op | correctness | worst margin | speed vs eager | decision |\n";
  os << "|---|---|---|---|---|---|\n";
  for (const auto& k : report.kernels) {
    std::string speed = "-", decision = "-";
    if (!k.speed.empty()) {
      // The slowest comparison against eager is the one that matters here.
      const auto eager = eager_comparisons(k);
      const SpeedComparison* worst = eager.front();
      for (const auto* s : eager)
        if (s->ratio > worst->ratio) worst = s;
      speed = speed_words(worst->ratio) + " (" + case_words(*worst) + ")";
      decision = outcome_name(worst->decision);
      for (const auto* s : eager)
        if (s->decision == Outcome::invalid) {
          decision = std::string(outcome_name(Outcome::invalid)) +
                     (inconclusive_fails(report) ? " (fails the gate)"
                                                 : std::string(" (") + kNotFailing + ")");
          break;
        }
    }
    os << "| `" << k.name << "` | " << k.op << " | " << correctness_cell(k) << " | "
       << format_number(k.correctness.worst_margin, "%.2f") << " | " << speed << " | " << decision
       << " |\n";
  }
  for (const auto& k : report.kernels) {
    if (k.correctness.fallback > 0)
      os << "\n**" << k.name << "**: " << k.correctness.fallback << " of " << k.correctness.cases
         << " cases were outside its guard and ran the reference (fallback)\n";
    for (const auto& r : k.correctness.captured)
      os << "\n**" << k.name << "**: captured inputs `" << inline_untrusted(r.kcase.captured)
         << "`: " << outcome_name(r.outcome)
         << (r.outcome == Outcome::passed
                 ? ""
                 : " [" + std::string(reason_name(r.rule)) + "] " + inline_untrusted(r.message))
         << "\n";
    if (!k.baseline.empty()) {
      const SpeedComparison* worst = nullptr;
      for (const auto& s : k.speed)
        if (s.baseline == k.baseline && (!worst || s.ratio > worst->ratio)) worst = &s;
      os << "\n**" << k.name << "** vs baseline `" << k.baseline << "`";
      if (k.baseline_correctness)
        os << ": baseline correctness " << k.baseline_correctness->passed << "/"
           << k.baseline_correctness->cases;
      if (worst)
        os << "; worst speed " << speed_words(worst->ratio) << " " << outcome_name(worst->decision);
      os << "\n";
    }
    if (k.workload_variants > 0) {
      os << "\n**" << k.name << "** workload (" << k.workload_variants << " variants, "
         << k.workload_calls << " calls): ";
      os << (k.workload_speedup_vs_eager ? speedup_words(*k.workload_speedup_vs_eager)
                                         : std::string("-"))
         << " than eager";
      if (!k.baseline.empty())
        os << ", "
           << (k.workload_speedup_vs_baseline ? speedup_words(*k.workload_speedup_vs_baseline)
                                              : std::string("-"))
           << " than " << k.baseline;
      os << "\n";
    }
    if (!k.message.empty() && k.outcome != Outcome::passed)
      os << "\n**" << k.name << "**: " << k.message << "\n";
    if (k.correctness.minimal) {
      const auto& m = *k.correctness.minimal;
      os << "\n**" << k.name << "** failed: " << m.message << "\n\n- minimal case: `"
         << m.kcase.id() << "`\n- repro: `" << m.repro << "`\n";
    }
    for (const auto& w : k.correctness.warnings)
      os << "\n> warning (" << k.name << "): " << w << "\n";
  }
  write_google_benchmark_markdown(os, report.google_benchmark);
}

}  // namespace kgate
