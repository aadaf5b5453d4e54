// The configuration file (--config FILE, "format": "kgate-config/1"): gate settings with the
// precedence global < op < kernel < command line. Every field is optional at every level.
//
//   {
//     "format": "kgate-config/1",
//     "global":  {"cases": 64, "rule": "allclose", "delta": 0.02, "alpha": 0.05},
//     "ops":     {"softmax": {"tolerance": {"bf16": {"atol": 1e-5, "rtol": 0.02}}}},
//     "kernels": {"softmax_block": {"rule": "ref_ratio", "ref_ratio_k": 4, "cases": 128}}
//   }
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/contract.hpp"
#include "core/dtype.hpp"

namespace kgate {

/// One level of settings; unset fields inherit from the level below.
struct GateSettings {
  std::optional<int64_t> cases;
  std::vector<std::string> families;  ///< empty: inherit
  std::optional<std::string> rule;    ///< one of the rules parse_config is given
  std::optional<double> atol;         ///< for every dtype (a per-dtype tolerance wins)
  std::optional<double> rtol;
  std::map<DType, std::pair<std::optional<double>, std::optional<double>>>
      tolerance;  ///< per dtype
  std::optional<double> max_ulp;
  std::optional<double> ref_ratio_k;
  std::optional<double> ref_ratio_floor;
  std::optional<double> delta;
  std::optional<double> alpha;
  std::optional<double> time_budget_s;
  std::optional<double> fragile_margin;
  /// false: a kernel paired with its base (--baseline-build and the like) is gated against its base
  /// alone; its eager comparison is reported, informational. A kernel without a base is always
  /// gated against eager.
  std::optional<bool> gate_against_eager;
  /// What the kernel states it accepts (core/contract.hpp); a level that sets one replaces the
  /// contract of the levels below it whole.
  std::optional<Contract> contract;
  /// "fail" (default): wrong values or a fault on a case outside the contract fail the kernel;
  /// "warn": they are a warning.
  std::optional<std::string> outside_contract;

  /// Overlays `over` on this (fields set in `over` win).
  void overlay(const GateSettings& over);
};

struct Config {
  std::string path;  ///< the file it came from (for messages); empty: built-in defaults
  GateSettings global;
  std::map<std::string, GateSettings> ops;
  std::map<std::string, GateSettings> kernels;
  /// Op files (kgate-op/1) or directories of them to load, as --ops does; relative paths are
  /// resolved against the config file's directory.
  std::vector<std::string> op_files;
  /// PyTorch custom-op libraries (relative to the config file) and the ops of them to check, as
  /// --torch-library and --torch-op take them.
  std::vector<std::string> torch_libraries;
  std::vector<std::string> torch_ops;

  /// global < op < kernel < cli.
  GateSettings resolve(const std::string& op, const std::string& kernel,
                       const GateSettings& cli) const;
};

/// Parses a config; throws a usage Error naming the file, the field (e.g.
/// "ops.softmax.tolerance.bf16.rtol") and what was expected. Unknown keys are errors. `rules`:
/// the names a "rule" may take, correctness::rule_names() (the rule registry, in gates/).
Config parse_config(const nlohmann::json& j, const std::string& path,
                    const std::vector<std::string>& rules);
Config load_config(const std::filesystem::path& path, const std::vector<std::string>& rules);

}  // namespace kgate
