// The end of a run (kgate check, kgate merge) and what the verbs share about reports: the
// environment, the git SHA, the console table, --format and the files of any verb's writers
// (report/writers.hpp) under --out, and the exit code.
#pragma once

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli/output.hpp"
#include "core/report.hpp"
#include "report/writers.hpp"

namespace kgate::cli {

/// The --format names of a verb's writers, in their order ("json", "junit", "md", "html").
template <class Model>
std::vector<std::string> format_names(const report::Writers<Model>& all) {
  std::vector<std::string> names;
  for (const auto* w : all) names.push_back(w->format());
  return names;
}

/// Adds --format to `cmd`, appending to `formats`: a format of `known` (format_names of the verb's
/// writers), repeatable, or a comma list of them ("--format json,md"). An unknown name or an empty
/// item is a usage error (exit 4) that names the known formats. Unset: every format.
CLI::Option* add_format_option(CLI::App& cmd, std::vector<std::string>& formats,
                               const std::vector<std::string>& known);

/// The writers of `all` that `formats` names, in the order of `all`; every one of them when
/// `formats` is empty (the default: what the verb has always written). `also` is added when given
/// (a worker's report.json, which its parent reads).
template <class Model>
report::Writers<Model> chosen_writers(const report::Writers<Model>& all,
                                      const std::vector<std::string>& formats,
                                      const std::string& also = "") {
  report::Writers<Model> chosen;
  for (const auto* w : all) {
    bool named = formats.empty() || w->format() == also;
    for (const auto& f : formats) named = named || f == w->format();
    if (named) chosen.push_back(w);
  }
  return chosen;
}

/// Each writer's file under `out`, each written whole (a reader never sees half a file).
template <class Model>
void write_files(const report::Writers<Model>& writers, const Model& model,
                 const std::filesystem::path& out) {
  for (const auto* w : writers) {
    std::ostringstream text;
    w->write(text, model);
    write_file_atomically(out / w->file_name(), text.str());
  }
}

/// The writers' files as the closing line names them: "DIR/report.json, junit.xml, summary.md".
template <class Model>
std::string file_list(const report::Writers<Model>& writers, const std::string& out_dir) {
  std::string text;
  for (const auto* w : writers) text += (text.empty() ? out_dir + "/" : ", ") + w->file_name();
  return text;
}

/// The environment variable's value, or "" when it is unset.
std::string env(const char* name);
/// The commit under test: $GITHUB_SHA, else `git rev-parse HEAD` here ("" outside a checkout).
std::string git_sha();
/// The compact result table on stdout, with each kernel's warnings.
void print_table(const RunReport& report);
/// A kgate-report/1 file; a usage error naming the file when it cannot be read or parsed.
RunReport load_report(const std::string& path);
/// The end of a run (kgate check, kgate merge): the multiple-comparison correction over every
/// comparison, the chosen report files (`writers`), the table, GitHub annotations and step summary;
/// returns the exit code.
int conclude(RunReport& report, const std::string& out_dir, bool inconclusive_fails,
             const report::Writers<RunReport>& writers);

}  // namespace kgate::cli
