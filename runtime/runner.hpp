// The runner: feeds a kernel LibTorch tensors for a case, checks the output against the eager
// reference and the fp64 oracle, and times the kernel against a baseline. Torch stays inside
// runner.cpp; this header is torch-free.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/report.hpp"
#include "gates/correctness/rules.hpp"
#include "gates/speed/interleave.hpp"
#include "runtime/cuda/launch_record.hpp"
#include "runtime/kernel.hpp"

namespace kgate {

/// Environment facts for the report.
struct RunnerEnvironment {
  std::string device;
  std::string driver;
  std::string cuda;
  std::string torch;
};

struct TimingOptions {
  speed::InterleaveOptions interleave;
  bool flush_l2 = true;  ///< cold-cache timing (default); false: warm
  int max_warmup_batches = 20;
  /// Warm-up ends after two batches once it has used this share of the time budget, settled or not.
  double warmup_budget_share = 0.25;
  /// Checked timing: each arm's launches cycle through this many buffer sets, whose inputs are
  /// redrawn (same buffers, new values) between blocks.
  int pools = 2;
};

/// Throws Error(usage) when the environment names a setting the runner cannot use (KGATE_JUDGE):
/// called by the parent before any worker starts, so that the run stops with exit 4.
void check_runner_environment();

class Runner {
 public:
  /// Throws Error(device) for the cuda backend when no device is usable.
  explicit Runner(Backend backend);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  Backend backend() const;
  RunnerEnvironment environment() const;

  /// Runs `kernel` on case `c` and judges it under `rule`. Faults become failed results; after a
  /// device fault the context is lost and later calls return failed results saying so. A case the
  /// kernel does not accept (KernelInfo::accepts) runs the op's eager reference into the outputs
  /// instead; the result is marked `fallback` (rule "fallback" when it passes).
  /// With `sweep_rtols` (kgate sweep), the result's needed_atol holds, per rtol, the smallest atol
  /// with which allclose against the eager reference passes.
  CaseResult check_case(const KernelInfo& kernel, const Case& c,
                        const correctness::RuleConfig& rule,
                        const std::vector<double>& sweep_rtols = {});

  /// Stale-output check: case `c`, then at once the same shape with other values (a seed derived
  /// from c's), each on fresh poisoned outputs. A kernel that returns a cached result (say,
  /// computed once per shape) passes the first and fails the second: the result then has rule
  /// "stale", c as its case and a message naming both. Otherwise the first run's failure, or the
  /// second's result.
  CaseResult check_stale(const KernelInfo& kernel, const Case& c,
                         const correctness::RuleConfig& rule);

  /// Runs `c` into outputs that hold earlier, finite values instead of the NaN poison: a kernel
  /// that writes only where it sees the poison (or skips outputs that look computed) fails, with
  /// rule "written_before". (The poison's payload also differs per run and case.)
  CaseResult check_written_before(const KernelInfo& kernel, const Case& c,
                                  const correctness::RuleConfig& rule);

  /// Determinism check: case `c` twice on fresh outputs; the two outputs must be bitwise equal
  /// (rule "determinism" otherwise). For ops whose contract says deterministic.
  CaseResult check_deterministic(const KernelInfo& kernel, const Case& c,
                                 const correctness::RuleConfig& rule);

  /// Times `kernel` against `baseline` (nullptr: the eager reference), interleaved. A case outside
  /// the kernel's guard is not timed (decision skipped, with a note); outside the baseline's guard
  /// the baseline's fallback (the eager reference) is timed, with a note.
  /// Checked timing: the arms' launches cycle through `options.pools` buffer sets, redrawn between
  /// blocks. With `rule`, one launch of the candidate per block (and of a kernel baseline in block
  /// 0 and a random quarter of the later blocks), at an index from the system's random source
  /// (SpeedComparison::checked_launches), is judged under it: a wrong candidate
  /// output ends the comparison as failed, with `wrong_while_timed` (rule "wrong_while_timed");
  /// a wrong baseline output makes it invalid.
  SpeedComparison time_case(const KernelInfo& kernel, const KernelInfo* baseline, const Case& c,
                            const TimingOptions& options, uint64_t seed,
                            const correctness::RuleConfig* rule = nullptr);

  /// Times `count` launches of `kernel` alone on case `c` (device ns each), for Google Benchmark.
  std::vector<double> time_launches(const KernelInfo& kernel, const Case& c, int count,
                                    bool flush_l2);

  /// The launches `kernel` makes on case `c` (runtime/cuda/launch_record.hpp), recorded on its
  /// second call (the first loads its code and does any one-time setup). A case outside its guard
  /// records "outside the guard". Not known on the cpu backend, or where CUPTI's callbacks are not
  /// available (the record's `why` says so).
  cuda::LaunchRecord record_launches(const KernelInfo& kernel, const Case& c);
  /// True once a device fault has made the CUDA context unusable.
  bool context_lost() const;

  /// While set, check_case runs the op's references (and a fallback's) on contiguous copies of
  /// the inputs from the start: for a case whose reference faulted on its view in an earlier
  /// worker (a fault cannot be retried in the context it ended).
  void set_references_on_copies(bool on);
  /// kgate check --jobs: the run's other workers on this device (their pids, asked at each look),
  /// which wait while this one times; the timing's check for other processes on the GPU leaves
  /// them out.
  void set_siblings(std::function<std::vector<int>()> siblings);
  /// Gives the device memory LibTorch's allocator keeps cached back to the driver (after a huge
  /// case, so that another process's huge case finds it free). A no-op on the cpu backend.
  void release_cached_memory();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The one-line command that replays case `c` on `kernel`.
std::string repro_command(const std::string& kernel, const Case& c);
/// The same for a KernelInfo: `kgate replay --package DIR` for an exported package.
std::string repro_command(const KernelInfo& kernel, const Case& c);

}  // namespace kgate
