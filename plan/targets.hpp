// What a run covers: its backend, its in-tree kernels and its share of them (--shard), chosen once
// for every verb (check, sweep, calibrate) from a RunRequest. Host-only: whether a GPU is present
// is asked through a DeviceProbe that the caller gives.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "plan/request.hpp"
#include "runtime/kernel.hpp"

namespace kgate::plan {

/// Whether this machine has a usable GPU, asked once and only when a choice needs it (a worker
/// asks after entering its sandbox; a run of cpu kernels never starts the CUDA runtime for it).
class DeviceProbe {
 public:
  /// `ask` says whether a device is available, and why not into its argument
  /// (cuda::device_available).
  explicit DeviceProbe(std::function<bool(std::string*)> ask) : ask_(std::move(ask)) {}
  bool present();
  /// Why there is no device ("" when there is one, or before present() was asked).
  const std::string& why();

 private:
  std::function<bool(std::string*)> ask_;
  std::optional<bool> present_;
  std::string why_;
};

/// The backend of a run, and what the verb says about it.
struct BackendChoice {
  Backend backend = Backend::cpu;
  /// A line for stderr: no GPU, so the cpu backend's kernels run instead ("" : nothing to say).
  std::string notice;
  /// The run needs a GPU there is not, and --no-device-exit-code was given: print `skip_line` on
  /// stdout and exit with this code.
  std::optional<int> skip_exit_code;
  std::string skip_line;
};

/// Packages run on the cuda backend; --backend cuda asks for it; without --backend, cuda when a
/// GPU is present, else cpu (said in `notice`). A run that needs a GPU there is not: the skip exit
/// code when the request has one, else a usage Error saying what to do instead.
BackendChoice choose_backend(const RunRequest& request, DeviceProbe& device);

/// Packages with --backend cpu: a usage Error (packages run on the cuda backend).
void refuse_packages_on_cpu(const RunRequest& request);

/// The in-tree kernels a run covers on `backend`: those `names` names, each of that backend (a
/// usage Error says which backend it needs), or, with no names, every kernel of the backend but
/// mutants and controls.
std::vector<const KernelInfo*> select_kernels(const std::vector<std::string>& names,
                                              Backend backend);

/// Shard i of n ("i/n", 1 <= i <= n); a usage Error names the text otherwise.
struct Shard {
  int index = 1;
  int count = 1;
};
Shard parse_shard(const std::string& text);
/// The names in shard `s`: sorted, then dealt round-robin (the first to shard 1, ...).
std::vector<std::string> shard_names(std::vector<std::string> names, const Shard& s);

}  // namespace kgate::plan
