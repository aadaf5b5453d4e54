// What kgate check's parent tells a worker about the run it is part of and where to go on after a
// fault: written into the worker's arguments (WorkerInvocation::task), read back by the worker's
// command line into CheckOptions::worker, which the pipeline follows.
#pragma once

#include <cstdint>
#include <string>

namespace kgate::plan {

struct WorkerTask {
  /// This process is a worker of kgate check (--in-worker): it checks its one kernel and writes
  /// the report; a fault's unrun cases are the parent's to run.
  bool in_worker = false;
  /// A fresh worker going on after a fault: the first `resume_at` cases of the kernel's case list
  /// are skipped (they ran in the workers before).
  int64_t resume_at = 0;
  /// The workers before this one failed the kernel (a fault of its own): this one judges its cases
  /// only. After the reference's faults alone it goes on to the behaviour checks and the timing.
  bool resumed_after_failure = false;
  /// Index of a case whose reference faulted on its layout in the worker before: its references
  /// run on contiguous copies from the start (-1: none).
  int64_t reference_copies_at = -1;
  /// Speed comparisons in the whole run (their p-values are Holm-corrected together); sizes the
  /// fewest blocks a comparison runs (speed::min_blocks_to_decide). 0: this kernel's own.
  int64_t run_comparisons = 0;
  /// Seconds of the run's budget growth (--budget-growth) left for this worker's comparisons: what
  /// the kernels before it did not take. Negative: the whole of --budget-growth (not a worker).
  double growth_left_s = -1;
  /// kgate check --jobs: the lock of this worker's device (core/device_share.hpp), which its
  /// correctness work shares with the other workers on the device and its timing has alone.
  /// Empty: the worker has its device to itself.
  std::string device_share;
};

}  // namespace kgate::plan
