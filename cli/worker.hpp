// Isolation: each kernel is checked in a worker process (the kgate binary itself) under a
// watchdog. A kernel that faults (a dead CUDA context), crashes or hangs fails alone, with a clear
// message, and the parent keeps every other kernel's results.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/output_capture.hpp"
#include "core/report.hpp"
#include "plan/worker_invocation.hpp"

namespace kgate::cli {

struct WorkerResult {
  bool ok = false;      ///< the worker exited and left a report
  int exit_code = -1;   ///< the worker's exit code (when it exited)
  RunReport report;     ///< the worker's report (when ok)
  std::string failure;  ///< why there is no report: crash, hang, bad output
  bool hung = false;    ///< killed by the watchdog
  double seconds = 0;
  /// How long the worker had waited, started ahead (keep_workers_ahead), when it was given this
  /// work; -1: it was started for it.
  double started_ahead_s = -1;
  OutputCapture output;  ///< what it printed (stdout and stderr, interleaved), bounded
};

/// Runs `/proc/self/exe` with the worker's arguments (under its wrapper, with its environment
/// variables added), waits at most `timeout_s` seconds (then SIGKILL), and reads the report the
/// worker wrote to `report_path` (an empty path: nothing is read, and a worker that exited is ok
/// with its exit code). Its stdout and stderr go to one pipe that is drained as it runs into
/// `output` (first and last 8 KiB kept): a kernel that prints without end neither floods the log
/// nor stalls the worker.
/// `stalled`, when given, is asked a few times a second; a reason it returns kills the worker as
/// hung with that reason (a per-case bound, finer than `timeout_s`).
WorkerResult run_worker(const plan::WorkerInvocation& worker, const std::string& report_path,
                        double timeout_s,
                        const std::function<std::optional<std::string>()>& stalled = {});
/// Workers started ahead: from the next worker started on, run_worker keeps `count` kgate
/// processes waiting that have loaded their libraries (LibTorch's, about half a second), so that
/// the worker after takes one that is ready instead of starting a process. Only a worker with no
/// wrapper and no environment of its own takes one (both are set at exec). A worker started ahead
/// touches no GPU until it is given its work. KGATE_NO_WORKERS_AHEAD=1 turns this off.
void keep_workers_ahead(size_t count);
/// Ends the workers waiting ahead (the end of a run).
void end_workers_ahead();

/// The process's part of a worker started ahead: called first in kgate's main when its one
/// argument is kStandbyArgument. Reads the worker's arguments from stdin (NUL-separated, to EOF)
/// and returns them, argv[0] first; empty: the parent ended it without work (exit quietly).
/// Throws Error(usage) when stdin held something else.
inline constexpr const char* kStandbyArgument = "--started-ahead";
std::vector<std::string> wait_for_work(const char* argv0);

/// A kgate process that is not a run's worker (kgate validate's reference worker), under the same
/// watchdog: `args` after "kgate".
WorkerResult run_worker_process(const std::vector<std::string>& args,
                                const std::string& report_path, double timeout_s);

/// Enters the run sandbox (package::enter_run_sandbox) in a worker, first of all: `readable` (the
/// packages) and the op files of KGATE_OPS may be read, `out_dir`, the NVRTC cache and `shared_dir`
/// (kgate check --jobs: the device's lock, when not empty) written.
/// Returns how the worker is confined, for its report: "landlock", or "none: REASON". Throws
/// Error(usage) when it is not confined and KGATE_REQUIRE_SANDBOX=1 (--require-sandbox).
std::string enter_worker_sandbox(const std::vector<std::string>& readable,
                                 const std::string& out_dir, const std::string& shared_dir = {});

/// The KernelReport that stands in for a worker that left no report.
KernelReport failed_kernel_report(const std::string& name, const std::string& op,
                                  const std::string& backend, const std::string& source,
                                  const std::string& failure, double seconds);

}  // namespace kgate::cli
