#include "report/writers.hpp"

namespace kgate::report {
namespace {

using WriteFunction = void (*)(std::ostream&, const RunReport&);

// A format's writer: the file it goes to ("" for a stream) and the function that writes it.
class FormatWriter final : public Writer {
 public:
  FormatWriter(const char* file_name, WriteFunction write) : file_name_(file_name), write_(write) {}
  std::string file_name() const override { return file_name_; }
  void write(std::ostream& os, const RunReport& report) const override { write_(os, report); }

 private:
  const char* file_name_;
  WriteFunction write_;
};

void write_json(std::ostream& os, const RunReport& report) {
  os << to_json(report).dump(2) << "\n";
}
void write_html(std::ostream& os, const RunReport& report) { os << render_html(report); }

}  // namespace

const std::vector<const Writer*>& file_writers() {
  static const FormatWriter json("report.json", write_json);
  static const FormatWriter junit("junit.xml", write_junit);
  static const FormatWriter markdown("summary.md", write_markdown);
  static const FormatWriter html("report.html", write_html);
  static const std::vector<const Writer*> writers = {&json, &junit, &markdown, &html};
  return writers;
}

const Writer& console_writer() {
  static const FormatWriter writer("", write_console_table);
  return writer;
}

const Writer& annotations_writer() {
  static const FormatWriter writer("", write_github_annotations);
  return writer;
}

}  // namespace kgate::report
