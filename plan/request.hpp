// What a run is asked to cover, as a verb's command line gives it: the planner's input. Independent
// of CLI11 and of each verb's argument struct (cli/ fills it; tests build it directly).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kgate::plan {

/// The verbs that run kernels: what their words say ("checking the cpu backend's kernels").
enum class Verb { check, sweep, calibrate };

/// "checking", "sweeping", "calibrating".
const char* verb_gerund(Verb verb);

/// The targets a run is asked for.
struct RunRequest {
  Verb verb = Verb::check;
  /// --kernel: in-tree kernels by name. Empty: every kernel of the backend but mutants and
  /// controls, unless packages (or, for check, torch ops) are what the run names.
  std::vector<std::string> kernels;
  /// Exported package directories (kgate.json): they run on the cuda backend.
  std::vector<std::string> packages;
  /// --backend: "cuda", "cpu", or empty: cuda when a GPU is present, else cpu.
  std::string backend;
  /// NVRTC target for packages; empty: the device's (sm_90 without one).
  std::string arch;
  /// --no-device-exit-code: exit with this code (e.g. 77, SKIPPED for CTest) when the run needs a
  /// GPU there is not; without it, that is a usage error.
  std::optional<int> no_device_exit_code;
  /// --shard i/n (check): this runner's share of the run's kernels and packages. Empty: all.
  std::string shard;
  /// --only (a worker): the one kernel or package it runs.
  std::string only;
};

}  // namespace kgate::plan
