// `kgate sweep`: tolerance sensitivity. Runs each kernel's (or package's) correctness cases and,
// per kernel and dtype, reports the error distribution, the pass rate over a tolerance grid, the
// frontier (the tightest atol that passes, per rtol) and the margin to the configured tolerance;
// a kernel that passes with a margin above the fragility threshold is FRAGILE. Writes sweep.json,
// sweep.md and sweep.html (the pass-rate curves), through report/sweep.hpp's writers, as --format
// chooses.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/request.hpp"
#include "runtime/pipeline.hpp"

namespace CLI {
class App;
}

namespace kgate::cli {

/// Options of `kgate sweep`.
struct SweepArgs {
  /// --kernel, the package directories (run on the cuda backend), --arch, --backend,
  /// --no-device-exit-code and a worker's --only.
  plan::RunRequest request{plan::Verb::sweep};
  /// seed, cases, families, rule, atol / rtol, the config file and the command-line settings.
  CheckOptions options;
  std::string config_path;
  /// Margin (observed / allowed) above which a passing kernel is FRAGILE; empty: the config's
  /// fragile_margin, else 0.8.
  std::optional<double> fragile_margin;
  bool fail_on_fragile = false;      ///< exit 1 when a kernel is FRAGILE
  std::string out_dir = "reports";   ///< receives sweep.json, sweep.md and sweep.html
  std::vector<std::string> formats;  ///< --format: the files to write; empty: all three
  bool quiet = false;
  std::string command_line;
  std::vector<std::string> argv;  ///< the arguments after "kgate", to start workers with
  /// Each kernel is swept in its own worker process (as `kgate check` does): a kernel that faults,
  /// crashes or hangs fails alone, and every other kernel keeps its rows.
  bool isolate = true;
  double kernel_timeout_s = 1800;
  bool in_worker = false;  ///< this process sweeps request.only and writes its raw cases
};

/// Adds the `sweep` subcommand to `app`, its options bound to `args`.
CLI::App* add_sweep_command(CLI::App& app, SweepArgs& args);

/// Runs the sweep; returns 0, 1 when a kernel fails its configured tolerance (or is FRAGILE with
/// fail_on_fragile), or 4 for an invalid package; usage problems throw.
int run_sweep(SweepArgs& args);

}  // namespace kgate::cli
