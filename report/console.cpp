// The console table of kgate check and kgate merge: a row per kernel, then each timed comparison,
// each failure's minimal case and repro, and the warnings.
#include "report/writers.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "core/safe_text.hpp"
#include "report/text.hpp"

namespace kgate {
namespace {

/// The slowest measured comparison of `k` against `baseline` (nullptr: none).
const SpeedComparison* worst_against(const KernelReport& k, const std::string& baseline) {
  const SpeedComparison* worst = nullptr;
  for (const auto& s : k.speed)
    if (s.baseline == baseline && s.decision != Outcome::skipped &&
        (!worst || s.ratio > worst->ratio))
      worst = &s;
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

void write_console_table(std::ostream& os, const RunReport& report) {
  // A run against a base leads with each kernel's verdict against it, then eager.
  const std::string base = base_name(report);
  bool paired = false;
  for (const auto& k : report.kernels) paired = paired || k.base.is_object();
  std::vector<std::vector<std::string>> rows;
  if (paired)
    rows.push_back({"kernel", "op", "backend", "correctness", "margin", "vs base (worst)",
                    "speed vs eager (worst)"});
  else
    rows.push_back({"kernel", "op", "backend", "correctness", "margin", "speed vs eager (worst)"});
  for (const auto& k : report.kernels) {
    rows.push_back({k.name, k.op, k.backend, correctness_cell(k),
                    format_number(k.correctness.worst_margin, "%.3f")});
    if (paired) rows.back().push_back(base_cell(k, base));
    rows.back().push_back(speed_cell(k));
  }
  const auto widths = column_widths(rows);
  // What this run left out, first: one line per backend (its command when it is one kernel).
  std::map<std::string, std::vector<const nlohmann::json*>> left_out;
  for (const auto& n : report.not_checked)
    left_out[n.value("backend", std::string())].push_back(&n);
  for (const auto& [backend, kernels] : left_out) {
    if (kernels.size() == 1) {
      const auto& n = *kernels.front();
      os << "\nNOT CHECKED " << n.value("name", std::string()) << ": "
         << n.value("why", std::string())
         << "; check it with: " << n.value("command", std::string());
      continue;
    }
    std::vector<std::string> names;
    for (const auto* n : kernels) names.push_back(n->value("name", std::string()));
    os << "\nNOT CHECKED " << kernels.size() << " " << backend << " kernels (this run checks the "
       << report.meta.backend << " backend): " << join(names)
       << "; check them with: kgate check --backend " << backend;
  }
  if (!left_out.empty()) os << "\n";
  os << "\n" << aligned_row(rows.front(), widths) << "\n";
  size_t row = 0;
  for (const auto& k : report.kernels) {
    os << aligned_row(rows[++row], widths) << "\n";
    if (k.correctness.fallback > 0)
      os << "  " << k.name << ": " << k.correctness.fallback << " of " << k.correctness.cases
         << " cases outside its guard ran the reference (fallback)\n";
    for (const auto& r : k.correctness.captured)
      os << "  " << k.name << ": captured inputs " << inline_untrusted(r.kcase.captured) << ": "
         << outcome_name(r.outcome)
         << (r.outcome == Outcome::passed ? format_number(r.margin, " (margin %.3f)")
                                          : " [" + std::string(reason_name(r.rule)) + "] " +
                                                inline_untrusted(r.message, 300))
         << "\n";
    if (!k.baseline.empty()) {
      std::string line = "  " + k.name + " vs " + (k.base.is_object() ? "base " : "baseline ") +
                         baseline_label(k, k.baseline, base) + ":";
      if (k.baseline_correctness)
        line += " baseline correctness " + std::to_string(k.baseline_correctness->passed) + "/" +
                std::to_string(k.baseline_correctness->cases) + ";";
      const SpeedComparison* worst = worst_against(k, k.baseline);
      line += worst ? " speed (worst) " + speed_words(worst->ratio) + ", " +
                          outcome_name(worst->decision)
                    : std::string(" speed not measured");
      os << line << "\n";
    }
    if (k.workload_variants > 0) {
      std::string line = "  " + k.name + " workload (" + std::to_string(k.workload_variants) +
                         " variants, " + std::to_string(k.workload_calls) +
                         " calls): " + speedup_text(k.workload_speedup_vs_eager) + " than eager";
      if (!k.baseline.empty())
        line += ", " + speedup_text(k.workload_speedup_vs_baseline) + " than " +
                baseline_label(k, k.baseline, base);
      os << line << "\n";
    }
  }
  for (const auto& k : report.kernels) {
    // Against the base first, then eager.
    for (const SpeedComparison* c : base_first(k)) {
      const SpeedComparison& s = *c;
      if (s.decision == Outcome::unchanged || s.decision == Outcome::skipped || s.blocks == 0) {
        // Not timed: no figures, the note says why.
        // (An UNCHANGED kernel's one entry stands for every case: it has none of its own.)
        os << "  " << k.name << " " << case_words(s) << ": " << outcome_name(s.decision) << " — "
           << s.note << "\n";
        continue;
      }
      os << "  " << k.name << " " << case_words(s) << ": " << speed_words(s.ratio) << " than "
         << baseline_label(k, s.baseline, base) << " (time ratio " << format_number(s.ratio, "%.3f")
         << " [" << format_number(s.ratio_lower, "%.3f") << ", "
         << format_number(s.ratio_upper, "%.3f") << "]; "
         << format_number(s.candidate_median_ns / 1e3, "%.1f") << " us vs "
         << format_number(s.baseline_median_ns / 1e3, "%.1f") << " us, " << s.blocks << " blocks, "
         << s.timer << ") " << outcome_name(s.decision) << (s.note.empty() ? "" : " — " + s.note)
         << "\n";
    }
    if (k.correctness.minimal) {
      const auto& m = *k.correctness.minimal;
      os << "\nFAILED " << k.name << ": " << m.message << "\n  minimal case: " << m.kcase.id()
         << "\n  repro: " << m.repro << "\n";
    }
    if (!k.message.empty() && k.outcome != Outcome::passed)
      os << "  " << k.name << ": " << k.message << "\n";
  }
  std::string twins;  // one line for all of them
  for (const auto& k : report.kernels)
    for (const auto& w : k.correctness.warnings) {
      if (w.find(kTwinNotTimed) != std::string::npos) twins += (twins.empty() ? "" : ", ") + k.name;
      else os << "  warning (" << k.name << "): " << w << "\n";
    }
  if (!twins.empty())
    os << "  not timed (correctness twins for the mutant suite, not deployment candidates): "
       << twins << "\n";
}

}  // namespace kgate
