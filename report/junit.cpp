// junit.xml: one testcase per kernel and gate (correctness, speed against each baseline).
#include "report/writers.hpp"

#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <string>

#include "core/format.hpp"
#include "report/text.hpp"

namespace kgate {

void write_junit(std::ostream& os, const RunReport& report) {
  // One testcase per kernel x gate (correctness, speed vs each baseline).
  int tests = 0, failures = 0, skipped = 0;
  const bool policy = inconclusive_fails(report);
  const std::string base = base_name(report);
  std::ostringstream body;
  for (const auto& k : report.kernels) {
    const std::string cls = "kgate." + k.backend + "." + k.name;
    ++tests;
    // The correctness phase's own time (older reports: the kernel's, which includes the timing).
    const double correctness_s = k.correctness.seconds > 0 ? k.correctness.seconds : k.seconds;
    body << "    <testcase classname=\"" << markup_escape(cls) << "\" name=\"correctness\" time=\""
         << format_number(correctness_s, "%.3f") << "\">\n";
    if (k.outcome == Outcome::skipped) {
      ++skipped;
      body << "      <skipped message=\"" << markup_escape(k.message) << "\"/>\n";
    } else if (k.outcome == Outcome::unchecked) {
      ++failures;  // nothing was shown: exit 3 whatever the policy
      body << "      <failure message=\"" << markup_escape("UNCHECKED: " + k.message) << "\"/>\n";
    } else if (k.outcome == Outcome::invalid && k.correctness.failed == 0 &&
               k.correctness.reference_errors > 0) {
      // The op's reference could not judge some cases: unproven, as the exit code counts it.
      const std::string why = std::to_string(k.correctness.reference_errors) + " of " +
                              std::to_string(k.correctness.cases) +
                              " cases could not be judged (reference errors)";
      if (policy) {
        ++failures;
        body << "      <failure message=\"" << markup_escape("INVALID: " + why) << "\"/>\n";
      } else {
        ++skipped;
        body << "      <skipped message=\""
             << markup_escape("INVALID (" + std::string(kNotFailing) + "): " + why) << "\"/>\n";
      }
    } else if (k.outcome == Outcome::failed || k.correctness.failed > 0) {
      ++failures;
      const CaseResult* shown = k.correctness.minimal            ? &*k.correctness.minimal
                                : k.correctness.failures.empty() ? nullptr
                                                                 : &k.correctness.failures.front();
      std::string msg = k.message;
      if (shown) msg = shown->message;
      body << "      <failure message=\"" << markup_escape(msg) << "\">";
      body << markup_escape(std::to_string(k.correctness.failed) + " of " +
                            std::to_string(k.correctness.cases) + " cases failed");
      if (shown)
        body << markup_escape("\nminimal case: " + shown->kcase.id() + "\nrepro: " + shown->repro);
      body << "</failure>\n";
    }
    body << "    </testcase>\n";
    // Against the base first (named as the base: "speed vs base k@main ..."), then eager.
    for (const SpeedComparison* c : base_first(k)) {
      const SpeedComparison& s = *c;
      ++tests;
      const std::string against = baseline_label(k, s.baseline, base);
      body << "    <testcase classname=\"" << markup_escape(cls) << "\" name=\"speed vs "
           << (against != s.baseline ? "base " : "") << markup_escape(against) << " "
           << markup_escape(case_words(s)) << "\" time=\"" << format_number(s.seconds, "%.3f")
           << "\">\n";
      const bool undecided = s.decision == Outcome::invalid || s.decision == Outcome::inconclusive;
      if (!s.gates && s.decision != Outcome::failed) {
        // Informational (an UNCHANGED kernel, or a comparison a config made informational).
        ++skipped;
        body << "      <skipped message=\""
             << markup_escape("informational, does not gate: " + speed_summary(s) +
                              (s.note.empty() ? "" : ": " + s.note))
             << "\"/>\n";
      } else if (s.decision == Outcome::regressed || s.decision == Outcome::failed ||
                 (undecided && policy)) {
        ++failures;
        std::string why = s.wrong_while_timed ? s.wrong_while_timed->message : speed_summary(s);
        if (s.decision == Outcome::invalid && !s.note.empty()) why += ": " + s.note;
        body << "      <failure message=\"" << markup_escape(why) << "\"/>\n";
      } else if (s.decision == Outcome::invalid) {
        // An unusable measurement is no pass: skipped, saying why and that it does not fail.
        ++skipped;
        body << "      <skipped message=\""
             << markup_escape("INVALID (" + std::string(kNotFailing) + "): " + s.note) << "\"/>\n";
      } else if (s.decision == Outcome::skipped) {
        ++skipped;
        body << "      <skipped message=\"" << markup_escape(s.note) << "\"/>\n";
      }
      body << "      <system-out>" << markup_escape(speed_summary(s)) << "</system-out>\n";
      body << "    </testcase>\n";
    }
  }
  // Kernels this run did not check: skipped testcases that say why and how to check them.
  for (const auto& n : report.not_checked) {
    ++tests;
    ++skipped;
    body << "    <testcase classname=\""
         << markup_escape("kgate." + n.value("backend", std::string()) + "." +
                          n.value("name", std::string()))
         << "\" name=\"correctness\" time=\"0.000\">\n      <skipped message=\""
         << markup_escape("NOT CHECKED: " + n.value("why", std::string()) +
                          "; check it with: " + n.value("command", std::string()))
         << "\"/>\n    </testcase>\n";
  }
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  // The Jenkins xunit schema (junit-10.xsd): testsuites takes no skipped; testsuite has errors.
  const std::string time = format_number(report.meta.seconds, "%.3f");
  os << "<testsuites name=\"kgate\" tests=\"" << tests << "\" failures=\"" << failures
     << "\" errors=\"0\" time=\"" << time << "\">\n";
  os << "  <testsuite name=\"kgate\" tests=\"" << tests << "\" failures=\"" << failures
     << "\" errors=\"0\" skipped=\"" << skipped << "\" time=\"" << time << "\">\n";
  os << body.str();
  os << "  </testsuite>\n</testsuites>\n";
}

}  // namespace kgate
