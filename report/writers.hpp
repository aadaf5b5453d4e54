// The writers of every verb's output, one per format, behind one interface generic over the verb's
// model: Writer<RunReport> for kgate check and kgate merge (core/report.hpp; report.json is its own
// JSON form, to_json), Writer<SweepReport> for kgate sweep (report/sweep.hpp) and
// Writer<CalibrationReport> for kgate calibrate (report/calibration.hpp). Each verb's file writers
// are listed here, in the order written; the command line's --format picks among them by name
// (cli/report_files.hpp writes the chosen ones under --out). A new format is its write function
// (a file of report/), its line in that verb's list (writers.cpp) and its declaration here.
//
// The run report (the same facts worded the same way, report/text.hpp):
//   report.json    json    the model itself
//   junit.xml      junit   one testcase per kernel and gate, for CI test reports
//   summary.md     md      the outcome, a table, what failed and why ($GITHUB_STEP_SUMMARY)
//   report.html    html    one self-contained page with inline SVG plots (no script, no URL)
//   annotations            GitHub workflow commands (::error::, ::warning::) on stdout
//   console                the compact result table of kgate check and kgate merge
// The sweep: sweep.json (json), sweep.md (md), sweep.html (html), its console table. The
// calibration: calibrate.json (json), its console report.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/report.hpp"

namespace kgate {

struct SweepReport;
struct CalibrationReport;

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

/// One format of a verb's output, written from the verb's model.
template <class Model>
class Writer {
 public:
  virtual ~Writer() = default;
  /// Its name for --format ("json", "junit", "md", "html"); "" for one written to a stream only.
  virtual std::string format() const = 0;
  /// The file it is written to under --out ("report.json"); "" for one written to a stream only.
  virtual std::string file_name() const = 0;
  virtual void write(std::ostream& os, const Model& model) const = 0;
};

/// A verb's file writers, in the order written.
template <class Model>
using Writers = std::vector<const Writer<Model>*>;

/// A format's writer: its --format name, its file and the function that writes it.
template <class Model>
class FunctionWriter final : public Writer<Model> {
 public:
  using Function = void (*)(std::ostream&, const Model&);
  FunctionWriter(const char* format, const char* file_name, Function write)
      : format_(format), file_name_(file_name), write_(write) {}
  std::string format() const override { return format_; }
  std::string file_name() const override { return file_name_; }
  void write(std::ostream& os, const Model& model) const override { write_(os, model); }

 private:
  const char* format_;
  const char* file_name_;
  Function write_;
};

/// kgate check's and kgate merge's files under --out: report.json, junit.xml, summary.md,
/// report.html.
const Writers<RunReport>& file_writers();
/// kgate sweep's: sweep.json, sweep.md, sweep.html.
const Writers<SweepReport>& sweep_writers();
/// kgate calibrate's: calibrate.json.
const Writers<CalibrationReport>& calibrate_writers();

/// The console table (stdout) and the GitHub annotations (stdout, in GitHub Actions).
const Writer<RunReport>& console_writer();
const Writer<RunReport>& annotations_writer();
/// kgate sweep's and kgate calibrate's console reports (stdout).
const Writer<SweepReport>& sweep_console_writer();
const Writer<CalibrationReport>& calibrate_console_writer();

}  // namespace report
}  // namespace kgate
