// Google Benchmark JSON output (`--benchmark_out=F --benchmark_out_format=json`) kept in the kgate
// report: reading and checking a file, and its compact Markdown table. Informational only: no gate
// decision reads it, because the speed gate's statistics come from its own interleaved blocks.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kgate {

/// One Google Benchmark JSON output file, embedded in report.json under "google_benchmark" as
/// written (non-finite numbers, which Google Benchmark writes as bare NaN / Infinity, become the
/// strings "nan", "inf" and "-inf" as elsewhere in the report).
struct GoogleBenchmarkOutput {
  std::string file;                                     ///< the path as given on the command line
  nlohmann::json context = nlohmann::json::object();    ///< its "context" object
  nlohmann::json benchmarks = nlohmann::json::array();  ///< its "benchmarks" array, every entry

  bool operator==(const GoogleBenchmarkOutput& o) const {
    return file == o.file && context == o.context && benchmarks == o.benchmarks;
  }
};

/// Checks the text of a Google Benchmark JSON output named `file` (used in messages). Throws a
/// usage Error (exit 4) naming the file and what is wrong: not JSON, no "context" object, no
/// "benchmarks" array, an entry without a "name" string.
GoogleBenchmarkOutput parse_google_benchmark_json(const std::string& text, const std::string& file);

/// Reads and checks a Google Benchmark JSON output file; a missing or unreadable file is a usage
/// Error as well.
GoogleBenchmarkOutput read_google_benchmark_json(const std::string& path);

/// The embedded form ({"file", "context", "benchmarks"}) and back. Reading is lenient (missing
/// members become empty) so that `kgate compare` reads any report.
nlohmann::json to_json(const GoogleBenchmarkOutput& output);
GoogleBenchmarkOutput google_benchmark_from_json(const nlohmann::json& j);

/// A Markdown section with one row per benchmark (per run name, not per repetition): its time
/// (Google Benchmark's median aggregate when it wrote one), CPU time and what the number is.
/// At most `max_rows` rows; the rest are counted. Writes nothing for no outputs.
void write_google_benchmark_markdown(std::ostream& os,
                                     const std::vector<GoogleBenchmarkOutput>& outputs,
                                     size_t max_rows = 40);

}  // namespace kgate
