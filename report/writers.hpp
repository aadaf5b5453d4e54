// The writers of a run's report, one per format, behind one interface. The model they read is
// core/report.hpp (report.json is its own JSON form, to_json); each writer here turns it into one
// other format, the same facts worded the same way (report/text.hpp):
//   junit.xml      one testcase per kernel and gate, for CI test reports
//   summary.md     the outcome, a table, what failed and why ($GITHUB_STEP_SUMMARY)
//   report.html    one self-contained page with inline SVG plots (no script, no URL)
//   annotations    GitHub workflow commands (::error::, ::warning::) on stdout
//   console        the compact result table of kgate check and kgate merge
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/report.hpp"

namespace kgate {

void write_junit(std::ostream& os, const RunReport& report);
void write_markdown(std::ostream& os, const RunReport& report);
/// GitHub workflow commands (::error::...) for every failure, one per line.
void write_github_annotations(std::ostream& os, const RunReport& report);
/// The whole document, from "<!DOCTYPE html>" to "</html>\n": the overall outcome (worded as in
/// summary.md), the run metadata, one summary row per kernel, then per kernel its correctness (a
/// worst-margin bar against the tolerance and the fragility threshold, the minimal failing case
/// with its repro command, the failures as found, warnings) and every speed comparison with a box
/// plot of its raw per-launch samples in µs. Non-finite numbers print as "-". Deterministic: the
/// same report gives the same bytes.
std::string render_html(const RunReport& report);
/// The result table (a row per kernel, with its fallback, captured inputs, baseline and workload
/// lines), each timed comparison, each failure's minimal case and repro, and the warnings.
void write_console_table(std::ostream& os, const RunReport& report);

namespace report {

/// One format of a run's report.
class Writer {
 public:
  virtual ~Writer() = default;
  /// The file it is written to under --out ("report.json"); "" for one written to a stream only.
  virtual std::string file_name() const = 0;
  virtual void write(std::ostream& os, const RunReport& report) const = 0;
};

/// The writers of the files under --out, in the order written: report.json, junit.xml,
/// summary.md, report.html.
const std::vector<const Writer*>& file_writers();
/// The console table (stdout) and the GitHub annotations (stdout, in GitHub Actions).
const Writer& console_writer();
const Writer& annotations_writer();

}  // namespace report
}  // namespace kgate
