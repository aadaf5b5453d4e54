// What every kgate verb's output is made of: UTC timestamps, files written whole, JSON numbers, and
// progress lines on stderr.
#pragma once

#include <cstdint>
#include <filesystem>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/runner.hpp"

namespace kgate::cli {

/// Now, as 2026-01-31T12:00:00Z.
std::string now_utc();

/// Writes `text` to `path` through a temporary file renamed into place, so that a reader (or a run
/// killed half-way) never sees half a file. A usage Error names the path on failure.
void write_file_atomically(const std::filesystem::path& path, const std::string& text);

/// A JSON number; null for a non-finite value (an unbounded limit, nothing measured).
nlohmann::ordered_json json_number(double v);

/// The "meta" object that opens a verb's JSON output: kgate version, command, backend, device,
/// driver, CUDA, torch, start time and seed (callers add their own fields).
nlohmann::ordered_json run_meta(const std::string& command, Backend backend, const RunnerEnvironment& env,
                                uint64_t seed);

/// Progress on stderr: one updating line on a terminal, one line per call otherwise (CI logs);
/// nothing when quiet.
class Progress {
 public:
  explicit Progress(bool quiet);
  void operator()(const std::string& line) const;
  /// Ends the updating line on a terminal (before other output).
  void end_line() const;

 private:
  bool quiet_;
  bool tty_;
};


/// A CLI11 check for a number above zero, whose message is "must be above 0, found 0" (CLI11's own
/// PositiveNumber prints its 300-digit upper bound).
CLI::Validator above_zero();

}  // namespace kgate::cli
