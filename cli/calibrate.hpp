// `kgate calibrate`: A/A runs of the speed gate (each kernel timed against itself) that measure the
// gate's false-positive rate, the timing noise floor and the smallest delta the configured
// blocks / alpha / budget support on this machine. Writes calibrate.json (report/calibration.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/request.hpp"
#include "runtime/runner.hpp"

namespace CLI {
class App;
}

namespace kgate::cli {

/// Options of `kgate calibrate`.
struct CalibrateArgs {
  /// --kernel (empty: every non-mutant kernel of the backend), --backend,
  /// --no-device-exit-code and a worker's --only.
  plan::RunRequest request{plan::Verb::calibrate};
  int comparisons = 50;              ///< A/A comparisons per speed case
  uint64_t seed = 1;                 ///< master seed: speed cases and block orders derive from it
  int64_t speed_cases = 3;           ///< speed cases per kernel (pipeline's speed_cases)
  TimingOptions timing;              ///< delta, alpha, budget, cold / warm L2
  std::string out_dir = "reports";   ///< receives calibrate.json
  std::vector<std::string> formats;  ///< --format: the files to write; empty: all (calibrate.json)
  bool quiet = false;
  std::string command_line;       ///< recorded in calibrate.json
  std::vector<std::string> argv;  ///< the arguments after "kgate", to start workers with
  /// Each kernel is calibrated in its own worker process under a watchdog (default): a kernel that
  /// faults, crashes or hangs loses only its own rows. --no-isolate calibrates in this process.
  bool isolate = true;
  double kernel_timeout_s = 1800;
  /// One buffer set and no checked launches (to measure what checked timing costs).
  bool unchecked_timing = false;
  bool in_worker = false;  ///< this process is a worker: calibrate request.only, write kernel.json
};

/// Adds the `calibrate` subcommand to `app`, its options bound to `args`; main() dispatches to
/// run_calibrate when the returned subcommand was given.
CLI::App* add_calibrate_command(CLI::App& app, CalibrateArgs& args);

/// Runs `comparisons` A/A comparisons per speed case of each selected kernel, prints a summary
/// table and writes <out>/calibrate.json (schema kgate-calibrate/1, rewritten after every case).
/// Returns 0, or 3 when some case had no valid comparison (nothing could be calibrated); usage
/// problems throw.
int run_calibrate(const CalibrateArgs& args);

}  // namespace kgate::cli
