// The report model of one kgate run ("kgate-report/1") and its writers: JSON, JUnit XML, Markdown
// (for $GITHUB_STEP_SUMMARY) and GitHub annotations.
//
// report.json, top level: "schema", "meta" (run metadata), "exit_code", "kernels" (per kernel:
// correctness, speed comparisons with raw samples, baseline, workload) and, when --benchmark-json
// was given, "google_benchmark": [{"file", "context", "benchmarks"}], each Google Benchmark JSON
// output as written (informational; no decision reads it). Changes are additive only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/case.hpp"
#include "core/error.hpp"
#include "core/google_benchmark.hpp"
#include "core/outcome.hpp"
#include "core/reason.hpp"

namespace kgate {

inline constexpr const char* kReportSchema = "kgate-report/1";

/// Error statistics of one output against one comparison target.
struct ErrorStats {
  double max_abs = 0;      ///< max |out - target| over finite pairs
  double max_rel = 0;      ///< max |out - target| / |target| over finite, nonzero targets
  int64_t mismatches = 0;  ///< elements outside the tolerance
  int64_t elements = 0;
  int64_t nan_mismatches = 0;  ///< elements whose NaN/Inf pattern differs from the target's
  int64_t unwritten = 0;       ///< elements still holding the poison value after the launch
};

/// One correctness verdict on one case.
struct CaseResult {
  Case kcase;
  Outcome outcome = Outcome::passed;
  Reason rule = Reason::none;  ///< allclose, ulp, ref_ratio, memory, fault, ...
  double observed = 0;         ///< the observed error under that rule
  double allowed = 0;          ///< the allowed error under that rule
  double margin = 0;           ///< observed / allowed (<= 1 passes)
  std::string message;         ///< why it failed, in words
  ErrorStats vs_reference;
  ErrorStats vs_oracle;
  double reference_vs_oracle_max_abs = 0;  ///< the eager reference's own error
  std::string repro;                       ///< one-line command that replays this case
  uint64_t output_fingerprint =
      0;  ///< hash of the first output's bits (determinism check; not serialized)
  /// The memory checks, as measured (unwritten elements are vs_reference.unwritten); not
  /// serialized: the verdict's rule and message carry them into the report.
  bool guard_bands_intact = true;
  bool inputs_modified = false;
  /// The case was outside the kernel's guard (KernelInfo::accepts): the eager reference ran
  /// instead of the kernel, as deployed code falls back. Its rule is then "fallback".
  bool fallback = false;
  /// The case is outside the kernel's contract (core/contract.hpp): why, in the contract's terms;
  /// "" inside it or without one.
  std::string outside_contract;
  /// kgate sweep only (not serialized): per swept rtol, the smallest atol with which allclose
  /// against the eager reference passes.
  std::vector<double> needed_atol;
};

struct CorrectnessReport {
  int64_t cases = 0;
  int64_t passed = 0;
  int64_t failed = 0;
  double worst_margin = 0;
  std::vector<CaseResult> failures;   ///< as found (capped)
  std::optional<CaseResult> minimal;  ///< the shrunk failing case
  std::vector<std::string> warnings;  ///< e.g. weak case families
  int64_t fallback = 0;               ///< cases outside the kernel's guard (the reference ran)
  /// Every captured-inputs case (Values::captured) and how it went, passed or not: each is
  /// reported under its file's name.
  std::vector<CaseResult> captured;
  int64_t behaviour_checks =
      0;  ///< stale-output and determinism checks run (failures count in failed)
  /// Cases the op's reference (an op file's TorchScript) failed on: neither passed nor failed; a
  /// kernel with any is not passed (outcome invalid unless it failed).
  int64_t reference_errors = 0;
  /// Cases not run here (a huge case without the device memory for it): neither passed nor failed;
  /// each has a warning that says why.
  int64_t skipped = 0;
  /// Wall time of the correctness phase (cases, shrinking, behaviour checks), less its waits for
  /// the device under kgate check --jobs.
  double seconds = 0;
  /// Cases on which the kernel faulted on the GPU (the CUDA context was lost), in the order run.
  /// Each fault ends its worker process; kgate check goes on with the remaining cases in a fresh
  /// one.
  std::vector<std::string> faulted;
  /// Cases on which the op's reference (eager, oracle, magnitude or a guard's fallback) faulted
  /// on the GPU: the reference's, never the kernel's. A case whose reference faulted on a view
  /// runs again in a fresh worker with the reference on contiguous copies.
  std::vector<std::string> reference_faulted;
  /// Cases left unrun (never counted as passed or failed): the correctness loop stops at a fault,
  /// since nothing more can run in that CUDA context. `resume_at` is the index of the first of them
  /// in the kernel's case list, where a fresh worker goes on.
  int64_t not_run = 0;
  int64_t resume_at = 0;
  /// With not_run: the case at resume_at is one whose reference faulted on its view; the fresh
  /// worker runs its references on contiguous copies (-1: none).
  int64_t reference_copies_at = -1;
  /// Null-kernel calibration: per null kernel ("zeros", "copy"), per family, cases run and failed.
  /// A family a null kernel passes entirely is too weak (a warning says so).
  std::map<std::string, std::map<std::string, std::pair<int64_t, int64_t>>> null_calibration;
  /// Which edges of the op's edge symbol the cases reached ("symbol", "tile_sizes" with where each
  /// came from, "tried" with their dtypes, "left_out" for budget, "spread"): null when not known
  /// (a replay, an op without symbols).
  nlohmann::json coverage;
  /// The kernel's contract and what its cases showed against it (gates/correctness/contract.hpp:
  /// declared, outside, refused, wrong); null without a contract.
  nlohmann::json contract;
};

/// One timed comparison of a candidate against a baseline.
struct SpeedComparison {
  std::string baseline;  ///< "eager" or the baseline package / kernel name
  Case kcase;
  Outcome decision = Outcome::inconclusive;
  std::string timer;       ///< cupti, events or chrono
  double ratio = 1;        ///< Hodges-Lehmann estimate of time(candidate) / time(baseline)
  double ratio_lower = 0;  ///< confidence bound on the ratio (lower)
  double ratio_upper = 0;  ///< confidence bound on the ratio (upper)
  double p_value = 1;      ///< one-sided, against a slowdown of more than delta
  double p_adjusted = 1;   ///< after the multiple-comparison correction
  double delta = 0.02;
  double alpha = 0.05;
  int64_t blocks = 0;
  int64_t dropped_blocks = 0;
  double baseline_median_ns = 0;
  double candidate_median_ns = 0;
  std::vector<double> baseline_ns;  ///< raw per-launch samples
  std::vector<double> candidate_ns;
  std::string note;
  double seconds = 0;  ///< wall time of this comparison (warm-up, blocks, statistics)
  /// Checked timing: the timed launches whose outputs were judged, the candidate's one per block, a
  /// kernel baseline's in block 0 and a random quarter of the later blocks, each drawn from the
  /// system's random source: (block, arm, launch), arm 0 the baseline and 1 the
  /// candidate, launch the arm's index in its block (0 to 2 x launches per arm - 1). With the case
  /// seed (each block's inputs derive from it) they replay the checks.
  struct CheckedLaunch {
    int64_t block = 0;
    int arm = 1;
    int64_t launch = 0;
  };
  std::vector<CheckedLaunch> checked_launches;
  int pools = 1;  ///< buffer sets each arm's launches cycled through (launch i used set i % pools)
  /// Wall seconds of `seconds` that checked timing's own work took (copies, checks, new contents).
  double check_seconds = 0;
  /// Checked launches the first look against eager did not clear, judged under the rule itself.
  int64_t checks_judged = 0;
  /// The kernels one launch of each arm started (warm-up's last launch; every timed launch must
  /// start the same, else the comparison is INVALID): "name<<<grid, block>>>", sorted. Empty when
  /// the timer does not see kernels (events, the cpu backend) or for the eager arm's
  /// "baseline_kernels" when nothing was timed.
  std::vector<std::string> baseline_kernels, candidate_kernels;
  /// NVML's SM clock over the timed blocks (MHz; 0: not read).
  unsigned sm_clock_min_mhz = 0, sm_clock_max_mhz = 0;
  /// Speed of light (OpSignature::min_bytes_*): the case's floor in bytes, the device's copy
  /// bandwidth (bytes read + written per second; measured once per process by a copy kernel, cold
  /// cache), and each arm's fraction of it at its median time. read + written = 0: no floor
  /// declared. `sol_enforced`: cold-cache timing, where a median below the floor is INVALID.
  double sol_read_bytes = 0, sol_written_bytes = 0, sol_ceiling_bytes_per_s = 0;
  double sol_candidate_fraction = 0, sol_baseline_fraction = 0;
  bool sol_enforced = false;
  /// The candidate's output was wrong in a timed launch ("wrong while timed"): the comparison's
  /// decision is failed, and this result joins the kernel's correctness failures.
  std::optional<CaseResult> wrong_while_timed;
  /// Whether the decision decides the exit code (false: informational, said in the report).
  bool gates = true;
  /// Seconds the comparison took beyond its time budget because the budget grew to decide it
  /// (speed::InterleaveOptions::growth_s, the run's --budget-growth); 0: it did not grow.
  double budget_grown_s = 0;
};

struct KernelReport {
  std::string name;
  std::string op;
  std::string backend;
  std::string source;  ///< in-tree kernel or package path
  Outcome outcome = Outcome::passed;
  std::string message;  ///< a fault, a hang, a skip reason
  /// What the kernel's worker process printed (stdout and stderr), capped: its first and last
  /// lines, made safe for a log; with the total and the dropped byte counts. Empty: nothing printed
  /// (or not isolated).
  std::string worker_output;
  uint64_t worker_output_bytes = 0;
  uint64_t worker_output_dropped_bytes = 0;
  /// Where and when its workers ran (kgate check with workers): the device as the worker named it
  /// (name, ordinal, UUID; "cpu" on the cpu backend) and the seconds since the run began at which
  /// its first worker started and its last one ended. Empty device: not recorded.
  std::string worker_device;
  int worker_ordinal = -1;  ///< the --devices ordinal its workers were given (-1: none)
  double worker_start_s = 0;
  double worker_end_s = 0;
  /// Its first worker was started ahead (it loaded its libraries while the kernel before ran) and
  /// had waited this long when given the kernel; -1: started for it.
  double worker_started_ahead_s = -1;
  CorrectnessReport correctness;
  std::vector<SpeedComparison> speed;
  double seconds = 0;

  /// The baseline package compared against (e.g. "softmax_rows@1.0.0"); empty: none. Its speed
  /// comparisons are those of `speed` whose `baseline` names it.
  std::string baseline;
  std::string baseline_source;  ///< the baseline package's directory
  /// The kernel's base version (kgate check --baseline-build): {name, source, digest, status:
  /// paired | new | unchanged | base_failed}; null without a base build.
  nlohmann::json base;
  /// The same correctness cases run on the baseline (informational: does not decide the exit code).
  std::optional<CorrectnessReport> baseline_correctness;
  /// Call-weighted speedup over the guard's captured variants (guard.variants with "calls"):
  /// sum(calls * eager median) / sum(calls * kernel median); > 1: the workload runs faster.
  std::optional<double> workload_speedup_vs_eager;
  /// The same against the baseline package.
  std::optional<double> workload_speedup_vs_baseline;
  /// Packages: {"device": the properties the launches read (device_props.hpp), "cases": {case id:
  /// [the launches it ran, in words]}}; null elsewhere. A case outside the guard lists "fallback".
  nlohmann::json launches;
  int64_t workload_variants = 0;  ///< variants timed for the workload view
  int64_t workload_calls = 0;     ///< their total call count
  /// kgate check --cost: wall seconds per phase (cost.hpp: startup (the process, LibTorch and the
  /// plan), context (the CUDA context), compile, probe, generate, kernel, reference, oracle, judge,
  /// behaviour, base, shrink, warmup, timing, wait, other), summed over the kernel's workers. Empty
  /// without --cost.
  std::map<std::string, double> cost_s;
  /// kgate check --cost: wall seconds of the correctness cases by case family (random, long,
  /// huge, ...), each case whole (its phases above overlap these), and how many ran.
  std::map<std::string, std::pair<double, int64_t>> cost_family_s;
};

/// The end of the warning a correctness twin gets instead of timing (the console groups them).
inline constexpr const char* kTwinNotTimed =
    "is a correctness twin (a simple reference kernel for the mutant suite), not a deployment "
    "candidate: not timed";

struct RunMeta {
  std::string kgate_version;
  std::string git_sha;
  std::string command;
  std::string backend;
  std::string device;  ///< GPU name or "cpu"
  std::string driver;
  std::string cuda;
  std::string torch;
  std::string started_at;  ///< ISO 8601 UTC
  double seconds = 0;
  uint64_t seed = 0;
  nlohmann::json config = nlohmann::json::object();
  nlohmann::json clocks = nlohmann::json::object();
  /// The base build of a pull-request run (kgate check --baseline-build): {ref, sha, dir, build,
  /// error}; null without one.
  nlohmann::json base;
};

struct RunReport {
  RunMeta meta;
  std::vector<KernelReport> kernels;
  /// Google Benchmark JSON outputs given with --benchmark-json, as written: top-level
  /// "google_benchmark" (absent when none). They decide nothing: exit_code() does not read them.
  std::vector<GoogleBenchmarkOutput> google_benchmark;
  /// Kernels of the base build that the head no longer has ({name, source}): informational.
  nlohmann::json removed = nlohmann::json::array();
  /// Kernels of the build that this run did not check ({name, backend, why, command}): a cpu
  /// kernel when the run checks the cuda backend, and the reverse. They fail nothing; every writer
  /// names them, so that a GPU job never passes a kernel it did not run.
  nlohmann::json not_checked = nlohmann::json::array();

  /// Overall outcome and exit code under the policy (inconclusive_fails: exit 3 on inconclusive).
  ExitCode exit_code(bool inconclusive_fails) const;
};

nlohmann::json to_json(const RunReport& report);
RunReport report_from_json(const nlohmann::json& j);
/// Joins the reports of the shards of one run (kgate check --shard i/n on several machines): the
/// kernels in the order given, the Google Benchmark outputs, and the first report's metadata with
/// seconds = the longest shard (they run side by side) and meta.config.merged_from = `names`.
/// Throws a usage Error naming both files when two shards hold the same kernel, and when the
/// shards ran with different seeds or backends (they would not be one run). Multiple-comparison
/// corrections are the caller's (speed::apply_holm over the joined kernels).
RunReport merge_reports(const std::vector<RunReport>& shards,
                        const std::vector<std::string>& names);
// The writers of junit.xml, summary.md, report.html, the annotations and the console table are
// in report/ (report/writers.hpp).

}  // namespace kgate
