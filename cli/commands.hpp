// The kgate verbs, one file each (check.cpp, list.cpp, replay.cpp, validate.cpp, pack.cpp,
// merge.cpp, compare.cpp, calibrate.cpp, sweep.cpp) and what they share (selection.cpp). Each
// returns the process exit code; main() maps exceptions to exit codes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/request.hpp"
#include "plan/targets.hpp"
#include "runtime/package/manifest.hpp"
#include "runtime/package/validate.hpp"
#include "runtime/pipeline.hpp"

namespace CLI {
class App;
}

namespace kgate::cli {

/// A validated, compiled package and its KernelInfo.
struct LoadedPackage {
  package::PackageManifest manifest;
  const OpSignature* op = nullptr;
  KernelInfo kernel;
};

/// Validates and compiles a package for `arch` (e.g. sm_90); prints every problem and returns
/// nullopt when it is invalid.
std::optional<LoadedPackage> load_package(const std::string& dir, const std::string& arch,
                                          bool quiet);

/// Kernels are named by their package's name in workers, reports and shards, so two packages of
/// one run may not share a name: throws Error(usage) naming both directories (`dirs[i]` is where
/// `packages[i]` came from).
void check_unique_package_names(const std::vector<std::string>& dirs,
                                const std::vector<LoadedPackage>& packages);

/// Every package of `dirs` loaded for `arch` (empty: the GPU's, else sm_90) and named apart;
/// nullopt when one is invalid (its problems printed): the verb exits 4.
std::optional<std::vector<LoadedPackage>> load_packages(const std::vector<std::string>& dirs,
                                                        const std::string& arch, bool have_device,
                                                        bool quiet);

/// The packages of a tree (--baseline-packages): manifest name -> package directory, for every
/// kgate.json under `dir`. Throws Error(usage) when `dir` is not a directory or two of its packages
/// share a name (naming both).
std::map<std::string, std::string> package_tree(const std::string& dir);

/// Says what a backend choice (plan::choose_backend) has to say: its notice on stderr; where the
/// run is skipped, its line on stdout, and returns the exit code (nullopt: the run goes on).
std::optional<int> announce(const plan::BackendChoice& choice);

/// sm_XY of device 0.
std::string device_arch();

/// What `kgate validate` and a loaded package check a manifest with: NVRTC for `arch`, the op
/// catalogue and op files.
package::ValidateOptions validate_options(const std::string& arch);

/// The check options of a package: cases on both sides of every guard boundary, the captured
/// variants, and generated cases moved inside the guard (so that every value family reaches the
/// package's kernels however narrow the guard) as extra correctness cases; the variants (with their
/// call counts) as the timed cases, or, without variants, the usual speed shapes moved inside.
CheckOptions package_options(const CheckOptions& base, const LoadedPackage& p);

/// The check options a case listing (kgate list --cases, kgate validate --cases) makes its cases
/// with: as `kgate check --seed --cases --family [--config]` would ("" : no config file).
CheckOptions listing_options(uint64_t seed, int64_t cases, const std::vector<std::string>& families,
                             const std::string& config_path);

/// --devices: "all" (every one of the `count` devices this process sees) or ordinals "0,1,...",
/// each below `count` when a driver answers (count > 0) and inside CUDA_VISIBLE_DEVICES
/// (`visible`, may be null), none twice. Throws a usage Error naming the entry that is wrong.
std::vector<int> parse_devices(const std::string& text, int count, const char* visible);

struct ListArgs {
  bool ops = false;
  bool all = false;   ///< include mutants
  int64_t cases = 0;  ///< > 0: list each kernel's correctness cases as kgate check makes this many
  uint64_t seed = 1;  ///< (kgate check's default)
  std::vector<std::string> kernels;
  std::vector<std::string> families;
  /// --config FILE: its op files, torch libraries and torch ops, bound and listed without a GPU
  /// (a dry run of kgate check --config's binding).
  std::string config_path;
};
/// Each verb adds its subcommand to the kgate command's parser, its options bound to `args`
/// (calibrate and sweep: calibrate.hpp, sweep.hpp); main() runs the verb that was given.
CLI::App* add_list_command(CLI::App& app, ListArgs& args);
int run_list(const ListArgs& args);

struct CheckArgs {
  /// --kernel, the package directories (validated and compiled with NVRTC first, exit 4 on any
  /// problem, then run on the cuda backend with cases on both sides of the guard), --arch,
  /// --backend, --no-device-exit-code, --shard and a worker's --only.
  plan::RunRequest request{plan::Verb::check};
  /// The previous version of the packages (e.g. main's copy), loaded side by side: the same
  /// correctness cases run on it and every timed case is timed against it, interleaved.
  std::string baseline_package;
  /// A build of the base commit (kgate check --baseline-build DIR): every kernel is paired with its
  /// namesake there (or as --pair NEW=OLD says), checked on the same cases and timed against it and
  /// against eager. Kernels running the same code are UNCHANGED and not timed (--time-unchanged
  /// times them anyway). --require-base: a base that cannot be loaded is exit 4, not eager-only.
  std::string baseline_build;
  /// Builds of the --torch-library libraries at the base commit: each --torch-op kernel is paired
  /// with the same op of these (loaded under a renamed namespace; runtime/torch_op.hpp).
  std::vector<std::string> baseline_torch_libraries;
  /// A tree of the base's packages: each package of the run is paired with the package of the same
  /// manifest name found under it (as --baseline-build pairs kernels).
  std::string baseline_packages;
  std::vector<std::string> pairs;
  bool require_base = false;
  bool time_unchanged = false;
  std::string out_dir = "reports";
  /// --format: the report files to write (report::file_writers' names); empty: all of them. A
  /// worker also writes report.json, which its parent reads.
  std::vector<std::string> formats;
  bool inconclusive_fails = false;
  bool quiet = false;
  std::string command_line;
  std::vector<std::string> argv;  ///< the arguments after "kgate", to start workers with
  /// Each kernel/package runs in its own worker process under a watchdog (default): a fault, crash
  /// or hang fails that kernel alone. --no-isolate runs everything in this process.
  bool isolate = true;
  double kernel_timeout_s = 1800;  ///< a worker still running after this is killed (hung)
  /// A correctness case still running after max(this, 20 x the slowest case of the kernel so far),
  /// at most max(this, 600 s), is hung: its worker is killed and the case fails.
  double case_timeout_s = 60;
  /// --devices: the GPUs whose workers run at once, one kernel (or package) per GPU at a time, as
  /// CUDA ordinals of this process. Empty: one worker at a time on the selected (or first) GPU.
  std::vector<int> devices;
  /// --jobs: workers at once on each GPU (or on the CPU). Their correctness cases share the
  /// device; a kernel's timing, huge cases and budget growth have it alone (core/device_share.hpp).
  int jobs = 1;
  /// A worker (--in-worker): the tile sizes the first worker observed (JSON: [{"size", "origin",
  /// "detail"}]); where it goes on after a fault and the run's comparisons are options.worker.
  std::string observed_sizes;
  std::string only_case;  ///< a worker trying one case id (shrinking a fault)
  /// Google Benchmark JSON outputs (kgate.kernel.NAME.bench --benchmark_out=F
  /// --benchmark_out_format=json) to keep in report.json. Checked before any kernel runs (exit 4 on
  /// a bad file); embedded by the process that writes the final report, never by a worker; they
  /// change no decision.
  std::vector<std::string> benchmark_json;
  /// --sanitize TOOL: after each kernel, its largest case of each family (at most sanitize_cases)
  /// runs again, each in a worker under compute-sanitizer (cli/sanitize.hpp). Empty: off.
  std::string sanitize;
  int64_t sanitize_cases = 6;
  /// The pipeline's options; options.worker: what the parent told this process when it is a
  /// worker (--in-worker, --resume-at, --resumed-after-failure, --reference-copies-at,
  /// --run-comparisons).
  CheckOptions options;
  /// This process is a worker: it checks request.only and writes the report.
  bool in_worker() const { return options.worker.in_worker; }
  /// As given on the command line, for main() and resolve_check_args to resolve: --config,
  /// --devices,
  /// --warm and --fragile-margin.
  std::string config_path;
  std::string devices_text;
  bool warm = false;
  std::optional<double> fragile_margin;
  /// --cost: wall seconds per phase of each kernel (core/cost.hpp) in report.json and a table.
  bool cost = false;
};
CLI::App* add_check_command(CLI::App& app, CheckArgs& args);
/// After parsing: the L2 policy, the config file (and the op files it names), and the settings
/// given on the command line, which win over the config's (global < op < kernel < CLI).
void resolve_check_args(const CLI::App& check, CheckArgs& args);
int run_check(const CheckArgs& args);

struct MergeArgs {
  std::vector<std::string> reports;  ///< the shards' report.json files
  std::string out_dir = "reports";
  std::vector<std::string> formats;  ///< --format: the files to write; empty: all
  bool inconclusive_fails = false;
};
/// Joins the shards' reports into one (report.json, junit.xml, summary.md, report.html under
/// out_dir, as --format chooses), applies
/// the multiple-comparison correction over all of them, prints the result table and returns the
/// run's exit code.
CLI::App* add_merge_command(CLI::App& app, MergeArgs& args);
int run_merge(const MergeArgs& args);

struct ReplayArgs {
  std::string kernel;       ///< a registered kernel, or
  std::string package_dir;  ///< an exported package directory (exactly one of the two)
  std::string arch;         ///< NVRTC target for a package; empty: the device's
  std::string case_ref;  ///< a case id, or a JSON file holding a case (or a report's minimal case)
  std::string rule;      ///< empty: the op's default rule
  std::optional<double> atol, rtol;
};
CLI::App* add_replay_command(CLI::App& app, ReplayArgs& args);
int run_replay(const ReplayArgs& args);

struct ValidateArgs {
  std::string package_dir;
  bool compile = true;
  std::string arch = "sm_90";
  /// --cases N: also list the cases `kgate check` would make with the same --seed, --cases,
  /// --family and --config (0: none listed).
  int64_t cases = 0;
  uint64_t seed = 1;
  std::vector<std::string> families;
  std::string config_path;
  /// Run the op's reference on one small case on the CPU, in a sandboxed worker (--no-reference:
  /// not); `reference_worker`: this process is that worker, writing nothing but its line.
  bool reference = true;
  bool reference_worker = false;
  /// --device-props PRESET|FILE: the device properties launches are judged under (default: every
  /// preset of --arch's architecture).
  std::string device_props;
};
CLI::App* add_validate_command(CLI::App& app, ValidateArgs& args);
int run_validate(const ValidateArgs& args);

/// kgate pack SRC OUT: a source package (include_dirs may reach outside it) copied into a
/// self-contained one, then validated as `kgate validate OUT` would.
struct PackArgs {
  std::string source_dir;
  std::string out_dir;
  bool compile = true;
  std::string arch = "sm_90";
  bool quiet = false;
};
CLI::App* add_pack_command(CLI::App& app, PackArgs& args);
int run_pack(const PackArgs& args);

struct CompareArgs {
  std::string old_report;
  std::string new_report;
};
CLI::App* add_compare_command(CLI::App& app, CompareArgs& args);
int run_compare(const CompareArgs& args);

}  // namespace kgate::cli
