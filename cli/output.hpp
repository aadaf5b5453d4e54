// What every kgate verb's output is made of: UTC timestamps, files written whole, JSON numbers, and
// progress lines on stderr; and the checks of the options the verbs share.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
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
nlohmann::ordered_json run_meta(const std::string& command, Backend backend,
                                const RunnerEnvironment& env, uint64_t seed);

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

/// A CLI11 check for a finite number that `accepts`: `what` ("> 0", ">= 0", "in (0, 0.5)") shows in
/// the help and in the message, "--atol: expected a finite number >= 0, found -1" (a usage error,
/// exit 4, while the command line is parsed: before anything runs).
CLI::Validator finite_number(const std::string& what, std::function<bool(double)> accepts);

/// The settings of the speed gate and the tolerances as every verb checks them: atol and rtol a
/// finite number >= 0; delta > 0; alpha in (0, 0.5) (the decision needs alpha < 0.5); a time budget
/// >= 0; a timeout > 0; a fragility threshold in (0, 1].
CLI::Validator tolerance_value();
CLI::Validator delta_value();
CLI::Validator alpha_value();
CLI::Validator time_budget_value();
CLI::Validator timeout_value();
CLI::Validator fragile_margin_value();

/// The case families of kgate check (gates/props' families and huge).
std::vector<std::string> check_families();

/// An option that takes names of a known list, repeatable or as a comma list ("--family
/// random,ragged" is "--family random --family ragged"); an unknown name or an empty item is a
/// usage error naming the list ("unknown case family 'x'; expected random, ragged, ...").
struct NameList {
  std::string flag;                ///< "--family"
  std::vector<std::string> known;  ///< the names it takes
  std::string short_noun;          ///< "family": "an empty family name in '...'"
  std::string noun;                ///< "case family": "unknown case family '...'"
  std::string example;             ///< a comma list, for the empty-item message
  std::string type_name;           ///< the help's placeholder ("" : CLI11's)
};
CLI::Option* add_name_list_option(CLI::App& cmd, const NameList& list,
                                  std::vector<std::string>& into, const std::string& help);

/// Adds --family to `cmd`, appending to `families`: a family of `known`, repeatable, or a comma
/// list of them ("--family random,ragged" is "--family random --family ragged"). An unknown name
/// or an empty item is a usage error that names the known families.
CLI::Option* add_family_option(CLI::App& cmd, std::vector<std::string>& families,
                               const std::vector<std::string>& known, const std::string& help);

}  // namespace kgate::cli
