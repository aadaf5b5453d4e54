#include "report/writers.hpp"

namespace kgate::report {
namespace {

class JsonWriter : public Writer {
 public:
  std::string file_name() const override { return "report.json"; }
  void write(std::ostream& os, const RunReport& report) const override { os << to_json(report).dump(2) << "\n"; }
};

class JunitWriter : public Writer {
 public:
  std::string file_name() const override { return "junit.xml"; }
  void write(std::ostream& os, const RunReport& report) const override { write_junit(os, report); }
};

class MarkdownWriter : public Writer {
 public:
  std::string file_name() const override { return "summary.md"; }
  void write(std::ostream& os, const RunReport& report) const override { write_markdown(os, report); }
};

class HtmlWriter : public Writer {
 public:
  std::string file_name() const override { return "report.html"; }
  void write(std::ostream& os, const RunReport& report) const override { os << render_html(report); }
};

class ConsoleWriter : public Writer {
 public:
  std::string file_name() const override { return ""; }
  void write(std::ostream& os, const RunReport& report) const override { write_console_table(os, report); }
};

class AnnotationsWriter : public Writer {
 public:
  std::string file_name() const override { return ""; }
  void write(std::ostream& os, const RunReport& report) const override { write_github_annotations(os, report); }
};

}  // namespace

const std::vector<const Writer*>& file_writers() {
  static const JsonWriter json;
  static const JunitWriter junit;
  static const MarkdownWriter markdown;
  static const HtmlWriter html;
  static const std::vector<const Writer*> writers = {&json, &junit, &markdown, &html};
  return writers;
}

const Writer& console_writer() {
  static const ConsoleWriter writer;
  return writer;
}

const Writer& annotations_writer() {
  static const AnnotationsWriter writer;
  return writer;
}

}  // namespace kgate::report
