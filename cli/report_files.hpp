// The end of a run (kgate check, kgate merge) and what the verbs share about reports: the
// environment, the git SHA, the console table, the report files and the exit code.
#pragma once

#include <filesystem>
#include <string>

#include "core/report.hpp"

namespace kgate::cli {

/// The environment variable's value, or "" when it is unset.
std::string env(const char* name);
/// The commit under test: $GITHUB_SHA, else `git rev-parse HEAD` here ("" outside a checkout).
std::string git_sha();
/// The compact result table on stdout, with each kernel's warnings.
void print_table(const RunReport& report);
/// A kgate-report/1 file; a usage error naming the file when it cannot be read or parsed.
RunReport load_report(const std::string& path);
/// report.json, junit.xml, summary.md and report.html under `out`, each written whole.
void write_report_files(const RunReport& report, const std::filesystem::path& out);
/// The end of a run (kgate check, kgate merge): the multiple-comparison correction over every
/// comparison, the reports, the table, GitHub annotations and step summary; returns the exit code.
int conclude(RunReport& report, const std::string& out_dir, bool inconclusive_fails);

}  // namespace kgate::cli
