// kgate check in worker processes: each kernel or package of the plan runs in a worker of its own
// under a watchdog (a fault, crash or hang fails that kernel alone; a fresh worker goes on after a
// fault, at most 16 per kernel), faults are shrunk and --sanitize runs in fresh workers, and
// --devices deals the kernels to one thread per GPU.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "cli/check_plan.hpp"
#include "cli/commands.hpp"
#include "core/report.hpp"

namespace kgate::cli {

struct WorkerRun {
  const CheckArgs& args;
  const CheckPlan& plan;
  std::chrono::steady_clock::time_point t0;  ///< the run's start (the workers' start and end times)
  int64_t run_comparisons;                   ///< passed to every worker: Holm sees the whole run
  RunReport& report;                    ///< the kernels, in the plan's order; meta from the workers
  std::function<void()> write_reports;  ///< after every kernel: a crash later loses nothing
};

/// Every kernel and package of `run.plan`, each in its workers.
void run_in_workers(const WorkerRun& run);

}  // namespace kgate::cli
