// How a verb starts one of its worker processes (the kgate binary again, under a watchdog): the
// parent's own arguments, and what the worker is told on top of them, described field by field
// and turned into its argument list in one place (args()). check, sweep and calibrate start their
// workers from it; cli/worker.hpp runs one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/request.hpp"
#include "plan/worker_task.hpp"
#include "runtime/kernel.hpp"

namespace kgate::plan {

struct WorkerInvocation {
  /// The parent's arguments after "kgate": the worker parses the same settings.
  std::vector<std::string> parent_args;
  std::string only;     ///< --only: the kernel or package the worker runs
  std::string out_dir;  ///< --out: where it writes (the last --out wins over the parent's)
  /// --backend: the backend the parent chose, when the request left it to the machine (the worker
  /// does not choose again, nor say again why it fell back). Empty: the parent's arguments decide.
  std::string backend;
  std::optional<int> device;  ///< --device: the GPU of this worker (--devices)
  /// kgate check's: the run the worker is part of (Holm's m), and where a fresh worker goes on
  /// after a fault (its in_worker is implied: every worker gets --in-worker).
  WorkerTask task;
  /// ... and the tile sizes the first worker observed (JSON), so that its case list is the first's.
  std::optional<std::string> observed_sizes;
  /// kgate check's worker that tries one case alone, untimed (--case ID --no-speed): a shrink
  /// candidate of a fault, a case under compute-sanitizer.
  std::string one_case;
  /// A program the worker runs under (compute-sanitizer and its options; the kgate binary's path
  /// follows them), and environment variables it gets besides the sanitized ones.
  std::vector<std::string> wrapper;
  std::vector<std::string> env;

  /// The worker of target `only` of a run of `request`, whose backend the parent chose as
  /// `backend` (passed on when the request left it to the machine and names no packages).
  static WorkerInvocation of_target(const RunRequest& request, Backend backend,
                                    std::vector<std::string> parent_args, std::string only,
                                    std::string out_dir);

  /// The worker's arguments after "kgate".
  std::vector<std::string> args() const;
};

}  // namespace kgate::plan
