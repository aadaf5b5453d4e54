// The check pipeline of one kernel: cases -> correctness (shrink on failure) -> interleaved timing
// -> KernelReport. Torch-free; the Runner does the tensor work.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/device_share.hpp"
#include "core/report.hpp"
#include "gates/props/generators.hpp"
#include "plan/worker_task.hpp"
#include "runtime/kernel.hpp"
#include "runtime/runner.hpp"

namespace kgate {

/// A case timed for the speed gate, with how often production calls it (0: unknown).
struct WeightedCase {
  Case kcase;
  int64_t calls = 0;
};

/// The margin (worst observed / allowed error) above which a passing kernel is FRAGILE, unless the
/// config's fragile_margin or --fragile-margin says otherwise.
inline constexpr double kDefaultFragileMargin = 0.8;

/// A captured-inputs file (core/captured.hpp): its name in case ids and where it lies.
struct CapturedFile {
  std::string name;
  std::string path;
};

struct CheckOptions {
  /// The baseline is the kernel's own base version (kgate check --baseline-build): a base that
  /// fails one of the head's correctness cases makes its comparisons INVALID, naming the case; a
  /// base running the head's code (same code digest) is UNCHANGED: nothing is timed.
  bool baseline_is_base = false;
  uint64_t seed = 1;
  int64_t cases = 64;
  std::vector<std::string> families;  ///< empty: all that apply
  std::string rule;                   ///< empty: the config's, else the op's default rule
  std::optional<double> atol;         ///< overrides the op's default for every dtype
  std::optional<double> rtol;
  /// The config file (--config): settings per op and kernel, below `cli` in precedence.
  Config config;
  /// Settings given explicitly on the command line (they win over the config).
  GateSettings cli;
  bool shrink = true;
  /// Stale-output and (for deterministic ops) bitwise-determinism checks on one case per family.
  bool behaviour_checks = true;
  /// Null-kernel calibration: all-zeros and copy-of-input "kernels" run on up to this many cases
  /// per family and must fail at least one, else the family is reported as too weak. 0: off.
  int64_t null_calibration_cases = 8;
  size_t max_failures_kept = 10;
  bool speed = true;
  int64_t speed_cases = 3;
  TimingOptions timing;
  /// Progress lines ("softmax_block: 12/64 cases"); may be empty.
  std::function<void(const std::string&)> progress;
  /// Correctness cases run after the generated ones (e.g. both sides of every boundary of a
  /// package's guard, and its captured variants).
  std::vector<Case> extra_cases;
  /// Captured-inputs files (a package's captured_inputs, --captured): each one whose __metadata__
  /// names no op or this kernel's op is a correctness case after the generated ones (it must fit
  /// the op). A captured case of only_cases finds its file here by name.
  std::vector<CapturedFile> captured;
  /// When non-empty: the cases timed instead of speed_cases(). Those with calls > 0 make the
  /// call-weighted workload view (KernelReport::workload_speedup_vs_eager / _vs_baseline).
  std::vector<WeightedCase> timed_cases;
  /// What kgate check's parent told this worker (--in-worker, --resume-at, ...): where it goes on
  /// after a fault, and the speed comparisons of the whole run. Defaults: not a worker.
  plan::WorkerTask worker;
  /// kgate check --jobs: this worker's device, shared with the other workers' correctness cases;
  /// each case holds it shared, a huge case and the timing alone (null: the device is this
  /// process's alone).
  const DeviceShare* device_share = nullptr;
  /// Called before each correctness case runs (result null) and after it (its result), with its
  /// index in the kernel's case list and the list's length, and once with index == total when the
  /// list is done. A worker records them, so that its parent knows which case a crash or hang hit
  /// and what the cases before it gave.
  std::function<void(size_t index, size_t total, const Case&, const CaseResult* result)> on_case;
  /// When non-empty: exactly these correctness cases instead of the generated ones (a fresh worker
  /// trying one shrink candidate of a faulting case).
  std::vector<Case> only_cases;
  /// The tile sizes an earlier worker observed in the kernel's launches (its report's
  /// correctness.coverage): a fresh worker going on after a fault takes them instead of probing
  /// again, so that its case list is the first worker's. nullopt: probe (a CUDA kernel or torch op
  /// that declares no tile sizes).
  std::optional<std::vector<FoundSize>> observed_sizes;
};

props::KernelTraits traits_of(const KernelInfo& kernel);

/// The cases of the captured-inputs files that apply to `op` (no "op" in their __metadata__, or
/// this op's name). Throws a package Error naming the file and `kernel` when one does not fit.
std::vector<Case> captured_cases(const OpSignature& op, const std::vector<CapturedFile>& files,
                                 uint64_t seed, const std::string& kernel);

/// A captured case made from its id (a worker's --case, replay) finds its file among `files` by
/// name; other cases are left alone.
void resolve_captured(Case& c, const std::vector<CapturedFile>& files);

/// The rule a case of this dtype is judged under when neither the config nor the command line
/// names one: conditioned where the op asks for it, else eager_relative for f16 and bf16 (unless
/// the op asks for ulp), else the op's.
correctness::RuleKind default_rule(const OpSignature& op, DType dtype);

/// One kernel's settings, resolved once: the config and the command line's settings by
/// Config::resolve's precedence (global < op < kernel < cli), then CheckOptions' own rule,
/// tolerances, case count and families, then the defaults. A kernel's cases, the rule of each of
/// its cases and its timing are read from this alone.
struct KernelSettings {
  GateSettings gates;  ///< the config and the command line, for this op and kernel
  std::string rule;    ///< the rule for every dtype; "" : the op's (default_rule) per dtype
  std::optional<double> atol, rtol;  ///< tolerances over every dtype's, the config's included
  props::GeneratorOptions cases;     ///< seed, case count and families of the generated cases
  TimingOptions timing;              ///< options.timing with the settings' delta, alpha and budget
};
KernelSettings resolve_settings(const OpSignature& op, const std::string& kernel,
                                const CheckOptions& options);

/// The rule for one case of a kernel: the op's default rule and tolerance for the dtype, overridden
/// by the kernel's settings.
correctness::RuleConfig rule_for(const OpSignature& op, DType dtype,
                                 const KernelSettings& settings);
/// rule_for under resolve_settings(op, kernel, options).
correctness::RuleConfig rule_for(const OpSignature& op, DType dtype, const CheckOptions& options,
                                 const std::string& kernel = "");

/// Representative shapes for timing: mid-size to large, cycling through the kernel's dtypes.
std::vector<Case> speed_cases(const OpSignature& op, const KernelInfo& kernel, uint64_t seed,
                              int64_t count);

/// The correctness cases check_kernel runs for `kernel`, in order: generated ones (seed, count and
/// families from the config under the command line), then options.extra_cases and captured inputs;
/// options.only_cases instead when given. `kgate validate --cases` lists them without a GPU.
std::vector<Case> correctness_cases(const KernelInfo& kernel, const CheckOptions& options);
/// The cases a run adds to a kernel's generated ones: its guard's boundary cases
/// (KernelInfo::guard_cases, a package's), then the run's extra_cases.
std::vector<Case> guard_and_extra_cases(const KernelInfo& kernel, const CheckOptions& options);

/// Checks one kernel: correctness over generated cases (then options.extra_cases), the first
/// failure shrunk, then timing against the eager reference (only when every case passed). Cases the
/// kernel does not accept run the reference (fallback) and are counted in correctness.fallback; a
/// kernel with `accepts` whose cases all fell on one side of its guard gets a warning.
/// With a `baseline` (e.g. the previous version of a package): the same correctness cases also run
/// on it (report.baseline_correctness, informational), and every timed case is also timed against
/// it, interleaved in this process (a regression against it fails the speed gate like one against
/// eager). Timed cases with call counts give the call-weighted workload speedups.
KernelReport check_kernel(Runner& runner, const KernelInfo& kernel, const CheckOptions& options,
                          const KernelInfo* baseline = nullptr);

/// The run's budget growth this process may still take: options.worker.growth_left_s (what its
/// parent or the kernels before left), or the whole --budget-growth when negative (not told).
double growth_left_at_start(const CheckOptions& options);
/// The seconds kernel `k`'s comparisons grew their time budgets by
/// (SpeedComparison::budget_grown_s).
double budget_grown_s(const KernelReport& k);
/// The run's budget growth left after kernel `k` was checked: growth_left_at_start less
/// budget_grown_s(k), at least 0.
double growth_left_after(const CheckOptions& options, const KernelReport& k);

/// The call-weighted speedup of `kernel_name`'s comparisons against `baseline_name` over the
/// weighted cases: sum(calls * baseline median) / sum(calls * candidate median), over the cases
/// with calls > 0 whose comparison was measured (not skipped or invalid); nullopt when none was.
std::optional<double> workload_speedup(const std::vector<SpeedComparison>& speed,
                                       const std::vector<WeightedCase>& weighted,
                                       const std::string& baseline_name);

}  // namespace kgate
