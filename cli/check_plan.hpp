// kgate check, before anything runs: what the run checks and against what. run_check (check.cpp)
// builds a CheckPlan in steps, in this order (each may refuse the run with a usage error or give
// an exit code of its own), then runs it in workers (check_workers.hpp) or in its own process:
//   load_base           --baseline-build and --baseline-torch-library: the base's kernels
//   load_run_packages   the packages, --baseline-package, --baseline-packages' namesakes
//   choose_backend      the packages' cuda, --backend, or what this machine has (plan/targets.hpp)
//   select_run_kernels  --kernel, the --torch-op kernels, or every kernel of the backend
//   pair_with_base      each head kernel with its base (--pair), under the head's code digest
//   check_captured_files, keep_share (--shard, a worker's --only)
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/base_build.hpp"
#include "cli/commands.hpp"

namespace kgate::cli {

struct CheckPlan {
  Backend backend = Backend::cpu;
  bool torch_ops = false;                   ///< --torch-op kernels are registered
  std::vector<const KernelInfo*> selected;  ///< in-tree (and torch-op) kernels, in run order
  std::vector<LoadedPackage> packages;      ///< after the kernels
  std::optional<LoadedPackage> baseline;    ///< --baseline-package: the base of every package
  std::optional<BaseBuild>
      base;  ///< --baseline-build, --baseline-torch-library, --baseline-packages
  std::map<std::string, LoadedPackage>
      base_packages;  ///< --baseline-packages: head package -> its base
  nlohmann::json base_packages_removed = nlohmann::json::array();
  std::map<std::string, const KernelInfo*> base_of;  ///< head kernel -> its base
  std::deque<KernelInfo> with_digest;  ///< paired kernels: copies carrying the head's code digest
  nlohmann::json removed = nlohmann::json::array();      ///< base kernels the head no longer has
  nlohmann::json not_checked = nlohmann::json::array();  ///< other backends' kernels (report)
  std::map<std::string, std::string> head_digests;  ///< the head build's code digests by kernel
  nlohmann::json head_build_record = nlohmann::json::object();

  size_t total() const { return selected.size() + packages.size(); }
  /// The i-th of the run: the in-tree kernels first, then the packages.
  const KernelInfo& kernel_at(size_t i) const {
    return i < selected.size() ? *selected[i] : packages[i - selected.size()].kernel;
  }
  /// The i-th's package, or null for a kernel.
  const LoadedPackage* package_at(size_t i) const {
    return i < selected.size() ? nullptr : &packages[i - selected.size()];
  }
  /// A package's base: --baseline-package's, else its namesake of --baseline-packages, else null.
  const KernelInfo* package_baseline(const LoadedPackage& p) const;
  /// The base a kernel is timed against (null: eager alone).
  const KernelInfo* base_of_kernel(const KernelInfo& k) const;
  /// Comparisons the run times per speed case: one against eager for each kernel, one more against
  /// its base for each paired kernel that changed, none for an UNCHANGED one.
  int64_t timed_pairs() const;
  /// The report's `base` record of a kernel (null without a base): paired, unchanged, new or
  /// base_failed, and the fields of the op file that differ between base and head (said on stderr
  /// unless `quiet`).
  nlohmann::json base_record(const KernelInfo& k, const KernelReport& kr, bool quiet) const;
};

/// Loads the base build and the base torch libraries, when given; adds what the worker sandbox must
/// let workers read to `readable`.
void load_base(const CheckArgs& args, CheckPlan& plan, std::vector<std::string>& readable);
/// The packages of the run and their bases (for the device's architecture); an exit code when one
/// is invalid.
std::optional<int> load_run_packages(const CheckArgs& args, CheckPlan& plan,
                                     kgate::plan::DeviceProbe& device);
/// The backend of the run (plan::choose_backend); an exit code (--no-device-exit-code) when it
/// needs a GPU there is not.
std::optional<int> choose_backend(const CheckArgs& args, CheckPlan& plan,
                                  kgate::plan::DeviceProbe& device);
void select_run_kernels(const CheckArgs& args, CheckPlan& plan);
void pair_with_base(const CheckArgs& args, CheckPlan& plan);
/// --captured: each file must fit every kernel it applies to, and apply to one at least.
void check_captured_files(const CheckArgs& args, const CheckPlan& plan);
/// --shard: this runner's share of the kernels and packages; --only (a worker): its one kernel.
void keep_share(const CheckArgs& args, CheckPlan& plan);

}  // namespace kgate::cli
