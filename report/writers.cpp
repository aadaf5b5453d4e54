// Every verb's list of file writers (writers.hpp): the one place a format joins a verb.
#include "report/writers.hpp"

#include "report/calibration.hpp"
#include "report/sweep.hpp"

namespace kgate::report {
namespace {

void write_json(std::ostream& os, const RunReport& report) {
  os << to_json(report).dump(2) << "\n";
}
void write_html(std::ostream& os, const RunReport& report) { os << render_html(report); }

}  // namespace

const Writers<RunReport>& file_writers() {
  static const FunctionWriter<RunReport> json("json", "report.json", write_json);
  static const FunctionWriter<RunReport> junit("junit", "junit.xml", write_junit);
  static const FunctionWriter<RunReport> markdown("md", "summary.md", write_markdown);
  static const FunctionWriter<RunReport> html("html", "report.html", write_html);
  static const Writers<RunReport> writers = {&json, &junit, &markdown, &html};
  return writers;
}

const Writers<SweepReport>& sweep_writers() {
  static const FunctionWriter<SweepReport> json("json", "sweep.json", write_sweep_json);
  static const FunctionWriter<SweepReport> markdown("md", "sweep.md", write_sweep_markdown);
  static const FunctionWriter<SweepReport> html("html", "sweep.html", write_sweep_html);
  static const Writers<SweepReport> writers = {&json, &markdown, &html};
  return writers;
}

const Writers<CalibrationReport>& calibrate_writers() {
  static const FunctionWriter<CalibrationReport> json("json", "calibrate.json",
                                                      write_calibration_json);
  static const Writers<CalibrationReport> writers = {&json};
  return writers;
}

const Writer<RunReport>& console_writer() {
  static const FunctionWriter<RunReport> writer("", "", write_console_table);
  return writer;
}

const Writer<RunReport>& annotations_writer() {
  static const FunctionWriter<RunReport> writer("", "", write_github_annotations);
  return writer;
}

const Writer<SweepReport>& sweep_console_writer() {
  static const FunctionWriter<SweepReport> writer("", "", write_sweep_console);
  return writer;
}

const Writer<CalibrationReport>& calibrate_console_writer() {
  static const FunctionWriter<CalibrationReport> writer("", "", write_calibration_console);
  return writer;
}

}  // namespace kgate::report
