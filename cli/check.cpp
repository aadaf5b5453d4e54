// kgate check: every selected kernel and package in worker processes (a fault, crash or hang fails
// that kernel alone; a fresh worker goes on after a fault), shrinking faults and --sanitize in
// fresh workers, several GPUs, and the reports.
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "cli/base_build.hpp"
#include "core/op_file.hpp"
#include "cli/output.hpp"
#include "cli/progress.hpp"
#include "cli/report_files.hpp"
#include "cli/sanitize.hpp"
#include "cli/worker.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/safe_text.hpp"
#include "core/safetensors.hpp"
#include "gates/correctness/rules.hpp"
#include "gates/props/shrink.hpp"
#include "references/catalogue.hpp"
#include "report/text.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/package/package_kernel.hpp"
#include "core/sha256.hpp"
#include "runtime/package/validate.hpp"
#include "runtime/torch_op.hpp"

namespace kgate::cli {
namespace fs = std::filesystem;

namespace {

// Workers per kernel: the first, and one more after each fault.
constexpr int kMaxFaultRestarts = 16;
// Shrink candidates of a faulting case, each tried in a fresh worker (a few seconds each).
constexpr int64_t kMaxFaultShrinkAttempts = 24;

// Folds the report of a worker that went on after a fault into the kernel's report so far.
void merge_resumed(KernelReport& into, KernelReport part) {
  auto& a = into.correctness;
  auto& b = part.correctness;
  a.passed += b.passed;
  a.failed += b.failed;
  a.fallback += b.fallback;
  a.reference_errors += b.reference_errors;
  a.skipped += b.skipped;
  a.behaviour_checks += b.behaviour_checks;
  a.worst_margin = std::max(a.worst_margin, b.worst_margin);
  a.seconds += b.seconds;
  // Past the cap of 10, the first few faults still: each names its CUDA error.
  const auto is_fault = [](const CaseResult& r) { return r.rule == "fault" || r.rule == "crash"; };
  auto faults_kept = std::count_if(a.failures.begin(), a.failures.end(), is_fault);
  for (auto& f : b.failures) {
    if (a.failures.size() < 10) a.failures.push_back(std::move(f));
    else if (is_fault(f) && faults_kept < 3) {
      ++faults_kept;
      a.failures.push_back(std::move(f));
    }
  }
  a.faulted.insert(a.faulted.end(), b.faulted.begin(), b.faulted.end());
  a.reference_faulted.insert(a.reference_faulted.end(), b.reference_faulted.begin(), b.reference_faulted.end());
  a.reference_copies_at = b.reference_copies_at;
  for (auto& r : b.captured) a.captured.push_back(std::move(r));
  a.not_run = b.not_run;
  a.resume_at = b.resume_at;
  for (auto& w : b.warnings)
    if (std::find(a.warnings.begin(), a.warnings.end(), w) == a.warnings.end()) a.warnings.push_back(std::move(w));
  // A minimal case that was shrunk (not a fault) wins; the smallest of them.
  if (b.minimal && (!a.minimal || a.minimal->rule == "fault" ||
                    (b.minimal->rule != "fault" && b.minimal->kcase.numel_hint() < a.minimal->kcase.numel_hint())))
    a.minimal = std::move(b.minimal);
  for (auto& [name, families] : b.null_calibration)
    for (auto& [family, counts] : families) {
      auto& c = a.null_calibration[name][family];
      c.first += counts.first;
      c.second += counts.second;
    }
  if (!part.speed.empty()) into.speed = std::move(part.speed);
  into.seconds += part.seconds;
  if (a.failed > 0) into.outcome = Outcome::failed;
  else if (part.outcome != Outcome::passed) into.outcome = part.outcome;
}

// A worker's arguments that try one case of the kernel alone, without timing, writing under
// `out_dir` (shrinking a fault, --sanitize).
std::vector<std::string> one_case_args(std::vector<std::string> child, const fs::path& out_dir, const Case& c) {
  for (size_t i = 0; i + 1 < child.size(); ++i)
    if (child[i] == "--out") child[i + 1] = out_dir.string();
  child.insert(child.end(), {"--case", c.id(), "--no-speed"});
  return child;
}

// The faulting case, shrunk by running each candidate in a fresh worker (a fault ends the CUDA
// context, so candidates cannot share one). The minimal case is one that ran and faulted.
void shrink_fault_in_workers(KernelReport& kr, const KernelInfo& k, const std::vector<std::string>& child,
                             const fs::path& worker_out, const CheckArgs& args) {
  auto& c = kr.correctness;
  if (c.minimal && c.minimal->rule != "fault" && c.minimal->rule != "crash") return;  // shrunk in process
  const CaseResult* fault = nullptr;
  for (const auto& f : c.failures)
    if ((f.rule == "fault" || f.rule == "crash") && (!fault || f.kcase.numel_hint() < fault->kcase.numel_hint())) fault = &f;
  if (!fault) return;
  const OpSignature& op = find_op(k.op);
  std::optional<CaseResult> last_fault;
  const auto faults = [&](const Case& candidate) {
    const auto attempt = one_case_args(child, worker_out / "shrink", candidate);
    std::error_code ignored;
    fs::remove(worker_out / "shrink" / "progress", ignored);
    auto w = run_worker(attempt, (worker_out / "shrink" / "report.json").string(), args.kernel_timeout_s,
                        CaseWatch(worker_out / "shrink" / "progress", args.case_timeout_s));
    if (!w.ok && !w.hung && read_progress(worker_out / "shrink" / "progress").started) {
      // It crashed its worker again: that case still fails the same way.
      CaseResult cr = *fault;
      cr.kcase = candidate;
      cr.message = "kernel '" + k.name + "': " + w.failure;
      cr.repro = repro_command(k, candidate);
      last_fault = cr;
      return true;
    }
    if (!w.ok || w.report.kernels.empty()) return false;
    const auto& cr = w.report.kernels.front().correctness;
    if (cr.faulted.empty() || cr.failures.empty()) return false;
    last_fault = cr.failures.front();
    return true;
  };
  if (!args.quiet) std::fprintf(stderr, "kgate: %s: shrinking the faulting case %s in fresh workers\n", k.name.c_str(), fault->kcase.id().c_str());
  const auto shrunk = props::shrink(fault->kcase, op, k.tile_sizes, faults, kMaxFaultShrinkAttempts);
  CaseResult minimal = *fault;
  if (shrunk.steps > 0 && last_fault && last_fault->kcase.id() == shrunk.minimal.id()) minimal = *last_fault;
  else if (shrunk.steps > 0 && faults(shrunk.minimal)) minimal = *last_fault;
  minimal.kcase.family = fault->kcase.family;
  c.minimal = minimal;
  if (!args.quiet)
    std::fprintf(stderr, "kgate: %s: minimal faulting case %s (%lld reductions, %lld workers)\n", k.name.c_str(),
                 minimal.kcase.id().c_str(), static_cast<long long>(shrunk.steps), static_cast<long long>(shrunk.attempts));
}

// --sanitize: the largest case of each family, each in a fresh worker under compute-sanitizer (a
// finding is a failure of its case; a sanitizer that cannot run is said, SKIPPED, and changes
// nothing). Caching is off in those workers, so that every tensor is an allocation of its own and
// memcheck sees its bounds.
void sanitize_in_workers(KernelReport& kr, const KernelInfo& k, const LoadedPackage* package,
                         const std::vector<std::string>& child, const fs::path& worker_out, const CheckArgs& args) {
  auto& c = kr.correctness;
  const std::string& tool = args.sanitize;
  std::string looked;
  const auto sanitizer = find_compute_sanitizer(&looked);
  if (!sanitizer) {
    c.warnings.push_back("sanitize " + tool + ": SKIPPED: compute-sanitizer was not found (looked at " + looked +
                         "; KGATE_COMPUTE_SANITIZER may name it)");
    return;
  }
  std::vector<Case> all;
  if (package) {
    all = package_options(args.options, *package).extra_cases;  // inside the guard, where the kernel runs
  } else {
    props::GeneratorOptions gen;
    gen.seed = args.options.seed;
    gen.cases = args.options.cases;
    gen.families = args.options.families;
    auto traits = traits_of(k);
    traits.huge = false;
    all = props::generate_cases(find_op(k.op), traits, gen);
  }
  const auto subset = sanitize_subset(all, args.sanitize_cases);
  WorkerLaunch launch;
  launch.wrapper = {*sanitizer, "--tool", tool, "--print-limit", "10", "--error-exitcode", "0"};
  launch.env = {"PYTORCH_NO_CUDA_MEMORY_CACHING=1"};
  std::string said;
  int64_t with_errors = 0;
  for (size_t n = 0; n < subset.size(); ++n) {
    const Case& kc = subset[n];
    const auto attempt = one_case_args(child, worker_out / "sanitize", kc);
    if (!args.quiet)
      std::fprintf(stderr, "kgate: %s: compute-sanitizer %s on case %zu/%zu %s\n", k.name.c_str(), tool.c_str(), n + 1,
                   subset.size(), kc.id().c_str());
    const auto w = run_worker(attempt, "", std::min(args.kernel_timeout_s, 900.0), {}, launch);
    const auto f = parse_sanitizer_output(w.output.text());
    if (!f.completed) {
      c.warnings.push_back("sanitize " + tool + ": SKIPPED: compute-sanitizer did not finish case " + kc.id() + ": " +
                           safe_log_text(w.failure.empty() ? f.reason : w.failure + "; " + f.reason));
      return;  // it would refuse the rest the same way
    }
    char secs[32];
    std::snprintf(secs, sizeof secs, " (%.1f s)", w.seconds);
    said += (said.empty() ? "" : ", ") + kc.id() + " " + std::to_string(f.errors) + secs;
    if (f.errors == 0) continue;
    ++with_errors;
    CaseResult cr;
    cr.kcase = kc;
    cr.outcome = Outcome::failed;
    cr.rule = tool;
    std::string first;
    for (const auto& l : f.first) first += (first.empty() ? "" : "; ") + l;
    cr.message = "compute-sanitizer " + tool + " found " + std::to_string(f.errors) + " error(s) in this case: " +
                 safe_log_text(first);
    cr.repro = repro_command(k, kc) + "  # under compute-sanitizer --tool " + tool;
    ++c.failed;
    if (c.failures.size() < 10) c.failures.push_back(cr);
    if (!c.minimal) c.minimal = cr;
    kr.outcome = Outcome::failed;
  }
  c.warnings.push_back("sanitize " + tool + ": " + std::to_string(subset.size()) + " case(s) under compute-sanitizer, " +
                       std::to_string(with_errors) + " with errors (errors per case: " + said + ")");
}

}  // namespace

namespace {

/// Whether a GPU that just ran a kernel became unusable. Its worker's own words first (a lost
/// device, ECC, no device), then NVML by the GPU's UUID (from the worker's report), asked without a
/// CUDA context. KGATE_TEST_UNUSABLE_DEVICES=0,1 says so of those ordinals (for tests without such a GPU).
struct DeviceHealth {
  std::string uuid;
  unsigned long long ecc_baseline = ~0ull;

  std::string trouble(int device, const KernelReport& kr) {
    if (uuid.empty()) {
      const auto at = kr.worker_device.find("GPU-");
      if (at != std::string::npos && kr.worker_device.size() >= at + 40) uuid = kr.worker_device.substr(at, 40);
    }
    if (const char* test = std::getenv("KGATE_TEST_UNUSABLE_DEVICES"); test && *test) {
      std::stringstream list(test);
      std::string item;
      while (std::getline(list, item, ','))
        if (item == std::to_string(device)) return "KGATE_TEST_UNUSABLE_DEVICES lists it";
    }
    if (kr.outcome == Outcome::failed) {
      std::string said = kr.message;
      for (const auto& w : kr.correctness.warnings) said += "\n" + w;
      for (const char* sign : {"uncorrectable ECC", "ECC error", "GPU is lost", "fallen off the bus",
                               "no CUDA-capable device", "busy or unavailable"})
        if (said.find(sign) != std::string::npos) return std::string("its worker said \"") + sign + "\"";
    }
    return cuda::nvml_device_trouble(uuid, &ecc_baseline);
  }
};

}  // namespace

CLI::App* add_check_command(CLI::App& app, CheckArgs& args) {
  auto& opt = args.options;
  auto* cmd = app.add_subcommand("check", "Check kernels and packages: correctness, then speed against the eager "
                                            "reference (and a baseline package)");
  cmd->add_option("packages", args.packages,
                  "Exported package directories (kgate.json) to check on the GPU; cases cover both sides of "
                  "each guard")
      ->check(CLI::Validator(
          [](std::string& path) -> std::string {
            std::error_code ec;
            if (std::filesystem::is_directory(path, ec)) return "";
            for (const auto& k : kgate::registered_kernels())
              if (k.name == path)
                return "'" + path + "' is a kernel, not a package directory: check it with --kernel " + path;
            return "package directory " + path + " does not exist (a kernel is named with --kernel NAME)";
          },
          "DIR"));
  // One value per --kernel / --family, so that package directories after them stay positional.
  cmd->add_option("--kernel", args.kernels,
                  "Kernel to check (repeatable; default: all but mutants, unless packages are given)")
      ->allow_extra_args(false);
  cmd->add_option("--baseline-package", args.baseline_package,
                  "Previous version of the packages: same cases run on it, timed against it interleaved");
  cmd->add_option("--baseline-build", args.baseline_build,
                  "Build directory of the base commit (its kgate-modules): each kernel is paired with its "
                  "namesake there, run on the same cases, and timed against it and against eager")
      ->type_name("DIR");
  cmd->add_option("--baseline-torch-library", args.baseline_torch_libraries,
                  "The base commit's build of a --torch-library: each --torch-op is paired with its op there "
                  "(repeatable)")
      ->type_name("PATH")
      ->allow_extra_args(false);
  cmd->add_option("--baseline-packages", args.baseline_packages,
                  "The base's tree of packages: each package is paired with its namesake (manifest name) there")
      ->type_name("DIR");
  cmd->add_option("--pair", args.pairs, "Pair a renamed kernel with its base: NEW=OLD (repeatable)")
      ->type_name("NEW=OLD")
      ->allow_extra_args(false);
  cmd->add_flag("--require-base", args.require_base,
                "Exit 4 when the base build cannot be used (default: gate against eager alone, and say why)");
  cmd->add_flag("--time-unchanged", args.time_unchanged,
                "Time kernels whose code equals their base's too (default: UNCHANGED, not timed)");
  cmd->add_option("--arch", args.arch, "NVRTC target for packages (default: the GPU's, e.g. sm_90)");
  cmd->add_option("--backend", args.backend, "cuda or cpu (default: cuda when a GPU is present)")
      ->check(CLI::IsMember({"cuda", "cpu"}));
  cmd->add_option("--seed", opt.seed, "Master seed: every case derives from it")->capture_default_str();
  cmd->add_option("--cases", opt.cases, "Correctness cases per kernel")->capture_default_str()->check(above_zero());
  cmd->add_option("--family", opt.families, "Case families (random, ragged, extreme, special, layout, long, huge)")
      ->allow_extra_args(false);
  cmd->add_option("--rule", opt.rule, "Correctness rule: " + kgate::correctness::rule_list() +
                  " (default: the op's; conditioned for ops that declare their conditioning, "
                  "else eager_relative for f16 and bf16 outputs)")
      ->check(CLI::IsMember(kgate::correctness::rule_names()));
  cmd->add_option("--config", args.config_path, "Config file (kgate-config/1): settings per op and kernel")
      ->check(CLI::ExistingFile);
  cmd->add_option("--atol", opt.atol, "Absolute tolerance (overrides the op's default)");
  cmd->add_option("--rtol", opt.rtol, "Relative tolerance (overrides the op's default)");
  cmd->add_option("--devices", args.devices_text,
                  "GPUs to use at once: 'all' or ordinals such as 0,1. Kernels and packages are dealt to one "
                  "worker per GPU, and a GPU never runs two at once; one report, Holm over the whole run")
      ->type_name("all|N,M,...");
  cmd->add_option_function<std::vector<std::string>>(
           "--captured",
           [&opt](const std::vector<std::string>& files) {
             for (const auto& f : files) opt.captured.push_back({f, f});
           },
           "Captured inputs (safetensors: one call's input tensors by the op's input names) run as fixed "
           "cases, each reported under its file name; repeatable")
      ->check(CLI::ExistingFile)
      ->allow_extra_args(false);
  cmd->add_flag_callback("--no-shrink", [&opt] { opt.shrink = false; }, "Do not shrink failing cases");
  cmd->add_flag_callback("--no-speed", [&opt] { opt.speed = false; }, "Skip the speed gate");
  cmd->add_option("--speed-cases", opt.speed_cases, "Shapes timed per kernel")->capture_default_str();
  cmd->add_option("--delta", opt.timing.interleave.delta, "Minimum slowdown that counts as a regression")
      ->capture_default_str();
  cmd->add_option("--alpha", opt.timing.interleave.alpha, "False-positive rate per comparison")->capture_default_str();
  cmd->add_option("--time-budget", opt.timing.interleave.time_budget_s, "Seconds of timing per comparison")
      ->capture_default_str();
  cmd->add_flag("--warm", args.warm, "Time with a warm L2 (default: flushed between launches)");
  cmd->add_flag_callback("--no-isolate", [&args] { args.isolate = false; },
                  "Run every kernel in this process (default: one worker process each, under a watchdog)");
  cmd->add_option("--case-timeout", args.case_timeout_s,
                  "Seconds a correctness case may run before it counts as hung: max(this, 20 x the slowest case "
                  "so far), at most max(this, 600)")
      ->capture_default_str()
      ->check(above_zero());
  cmd->add_option("--kernel-timeout", args.kernel_timeout_s,
                  "Seconds before a kernel's worker counts as hung and is killed")
      ->capture_default_str();
  cmd->add_option("--sanitize", args.sanitize,
                  "Run each kernel's largest case of each family (up to 2^20 elements) again under NVIDIA "
                  "compute-sanitizer with this tool, each in its own worker; a finding fails its case")
      ->check(CLI::IsMember(sanitizer_tools()));
  cmd->add_option("--sanitize-cases", args.sanitize_cases, "Cases per kernel under --sanitize")
      ->capture_default_str()
      ->check(above_zero());
  cmd->add_option("--only", args.only, "")->group("");   // internal: the worker's kernel
  cmd->add_flag("--in-worker", args.in_worker, "")->group("");
  cmd->add_option("--resume-at", args.resume_at, "")->group("");  // internal: after a fault
  cmd->add_flag("--resumed-after-failure", args.resumed_after_failure, "")->group("");  // internal
  cmd->add_option("--reference-copies-at", args.reference_copies_at, "")->group("");  // internal
  cmd->add_option("--run-comparisons", args.run_comparisons, "")->group("");  // internal: Holm's m
  cmd->add_option("--case", args.only_case, "")->group("");       // internal: shrinking a fault
  cmd->add_option("--out", args.out_dir, "Directory for report.json, junit.xml and summary.md")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->capture_default_str();
  cmd->add_option("--benchmark-json", args.benchmark_json,
                  "Google Benchmark JSON output (--benchmark_out=F --benchmark_out_format=json) to keep in "
                  "report.json (repeatable; informational, decides nothing)")
      ->type_name("FILE")
      ->allow_extra_args(false);
  cmd->add_option("--shard", args.shard,
                  "Check only shard i of n (i/n): the kernels and packages, sorted by name, dealt round-robin; "
                  "join the shards' reports with kgate merge");
  cmd->add_option("--fragile-margin", args.fragile_margin,
                  "Worst margin above which a passing kernel gets a FRAGILE warning (default: the config's "
                  "fragile_margin, else 0.8)")
      ->check(CLI::Range(1e-9, 1.0));
  cmd->add_flag("--inconclusive-fails", args.inconclusive_fails, "Exit 3 when a speed decision is inconclusive");
  cmd->add_option("--no-device-exit-code", args.no_device_exit_code,
                  "Exit with this code (e.g. 77 = SKIPPED for CTest) when --backend cuda finds no GPU");
  cmd->add_flag("-q,--quiet", args.quiet, "No progress lines");
  return cmd;
}

void resolve_check_args(const CLI::App& check, CheckArgs& args) {
  auto& opt = args.options;
  opt.timing.flush_l2 = !args.warm;
  if (!args.config_path.empty()) opt.config = load_config(args.config_path);
  for (const auto& p : opt.config.op_files) add_ops_path(p);
  if (check.count("--cases")) opt.cli.cases = opt.cases;
  if (check.count("--family")) opt.cli.families = opt.families;
  if (check.count("--delta")) opt.cli.delta = opt.timing.interleave.delta;
  if (check.count("--alpha")) opt.cli.alpha = opt.timing.interleave.alpha;
  if (check.count("--time-budget")) opt.cli.time_budget_s = opt.timing.interleave.time_budget_s;
  if (args.fragile_margin) opt.cli.fragile_margin = args.fragile_margin;
}

int run_check(const CheckArgs& args) {
  const auto t0 = std::chrono::steady_clock::now();
  // A worker confines itself before it starts CUDA or runs anything of a package or an op file.
  std::vector<std::string> readable = args.packages;
  readable.push_back(args.baseline_package);
  if (!args.baseline_packages.empty()) readable.push_back(args.baseline_packages);
  // The head's own build, when its compiled kernels run: what a kernel reads from its build (an
  // autotuned configuration) it reads in the worker too, as the base's kernels read theirs. (A run
  // of packages or torch ops alone keeps them to their own files.)
  // (--torch-op kernels are registered before run_check; the selection below reads this too.)
  const bool torch_ops = std::any_of(registered_kernels().begin(), registered_kernels().end(),
                                     [](const KernelInfo& k) { return torch_op_memory_note(k.name) != nullptr; });
  if (!args.kernels.empty() || (args.packages.empty() && !torch_ops))
    if (const std::string dir = head_build_dir(); !dir.empty()) readable.push_back(dir);
  // The base build, loaded before the sandbox (its modules are mapped executable).
  std::optional<BaseBuild> base;
  std::map<std::string, std::string> head_digests;
  nlohmann::json head_build_record = nlohmann::json::object();
  if (!args.baseline_build.empty()) {
    base = load_base_build(args.baseline_build, KGATE_VERSION);
    // ci/gate.sh --against says why it has no base build to give (a ref it could not fetch or build).
    if (const char* why = std::getenv("KGATE_BASE_ERROR"); why && *why && !base->error.empty())
      base->error = std::string(why) + " (" + base->error + ")";
    if (!base->error.empty() && args.require_base)
      throw_usage("--require-base: the base build cannot be used: " + base->error);
    if (!base->error.empty() && !args.in_worker)
      std::fprintf(stderr, "kgate: the base build cannot be used (%s): every kernel is gated against eager alone\n",
                   base->error.c_str());
    const HeadBuild head = head_build(KGATE_VERSION);
    head_digests = head.digests;
    head_build_record = head.build;
    // Built differently (another compiler, flags, build type or architectures): the comparison
    // measures the build as much as the change.
    if (base->error.empty())
      for (const auto& d : build_differences(head.build, base->build)) {
        if (args.require_base) throw_usage("--require-base: the base was built differently from the head: " + d);
        base->warnings.push_back("the base was built differently from the head: " + d);
      }
    readable.push_back(args.baseline_build);
  }
  // The base of each torch op: its library built at the base commit, loaded under renamed
  // namespaces. Its code digest is the libraries' (a change anywhere in them times every op).
  if (!args.baseline_torch_libraries.empty()) {
    if (!base) base.emplace();
    for (const auto& p : args.baseline_torch_libraries)
      for (const auto& head : loaded_torch_libraries())
        if (fs::weakly_canonical(p) == fs::path(head))
          throw_usage("--baseline-torch-library " + p + " is the head's library (--torch-library): give the base "
                      "commit's build of it");
    try {
      std::vector<std::string> old_libraries;
      for (const auto& p : args.baseline_torch_libraries) old_libraries.push_back(fs::absolute(p).string());
      const auto libraries_digest = [](const std::vector<std::string>& files) {
        std::string joined;
        for (const auto& f : files) {
          const std::string d = module_code_digest(f);
          if (d.empty()) return std::string();
          joined += d;
        }
        return sha256_hex(joined);
      };
      const std::string base_digest = libraries_digest(old_libraries);
      const std::string head_digest = libraries_digest(loaded_torch_libraries());
      std::string listed;
      for (const auto& f : old_libraries) listed += (listed.empty() ? "" : ", ") + f;
      for (auto& k : base_torch_op_kernels(old_libraries)) {
        k.code_digest = base_digest;
        head_digests[k.name] = head_digest;
        base->module_of[k.name] = listed;
        base->kernels[k.name] = std::move(k);
      }
      base->torch_libraries = old_libraries;
    } catch (const Error& e) {
      if (args.require_base) throw;
      const std::string why = e.what();
      if (args.baseline_build.empty()) base->error = why;
      else base->warnings.push_back(why + " (the torch ops are gated against eager alone)");
      if (!args.in_worker) std::fprintf(stderr, "kgate: %s: the torch ops are gated against eager alone\n", why.c_str());
    }
  }
  for (const auto& f : args.options.captured) readable.push_back(f.path);  // --captured files
  const std::string sandbox =
      args.in_worker ? enter_worker_sandbox(readable, args.out_dir)
                     : args.isolate ? std::string()
                                    : "none: --no-isolate runs kernels and references in kgate's own process";
  if (!args.in_worker && !args.isolate) {
    const char* require = std::getenv("KGATE_REQUIRE_SANDBOX");
    if (require && std::string(require) == "1")
      throw_usage("--no-isolate runs kernels and references outside the worker sandbox, and --require-sandbox "
                  "is set: drop one of them");
  }
  if (!args.baseline_package.empty() && args.packages.empty())
    throw_usage("--baseline-package compares packages: name the new package too (kgate check NEW_PKG "
                "--baseline-package " + args.baseline_package + ")");
  if (!args.packages.empty() && args.backend == "cpu")
    throw_usage("packages run on the cuda backend: drop --backend cpu (or check in-tree cpu kernels with --kernel)");
  // Checked before anything runs, so that a bad file costs no kernel time. Workers leave them to
  // the parent, which writes the final report.
  std::vector<GoogleBenchmarkOutput> google_benchmark;
  if (!args.in_worker)
    for (const auto& path : args.benchmark_json) google_benchmark.push_back(read_google_benchmark_json(path));
  std::string why;

  // Packages first: an invalid package is a package error (exit 4), with or without a GPU.
  std::vector<LoadedPackage> packages;
  std::optional<LoadedPackage> baseline;
  std::map<std::string, LoadedPackage> base_packages;  // --baseline-packages: head package -> its base
  nlohmann::json base_packages_removed = nlohmann::json::array();
  bool have_device = false;
  if (!args.packages.empty()) {
    have_device = cuda::device_available(&why);
    const std::string arch = !args.arch.empty() ? args.arch : have_device ? device_arch() : "sm_90";
    auto loaded = load_packages(args.packages, arch, have_device, args.quiet);
    if (!loaded) return static_cast<int>(ExitCode::usage);
    packages = std::move(*loaded);
    if (!args.baseline_package.empty()) {
      baseline = load_package(args.baseline_package, arch, args.quiet);
      if (!baseline) return static_cast<int>(ExitCode::usage);
      baseline->kernel.name = baseline->manifest.name + "@" + baseline->manifest.version;
      for (const auto& p : packages)
        if (p.manifest.op != baseline->manifest.op)
          throw_usage("package " + p.manifest.name + " implements op '" + p.manifest.op + "' but the baseline " +
                      args.baseline_package + " implements '" + baseline->manifest.op +
                      "': a baseline must implement the same op");
    }
    if (!args.baseline_packages.empty()) {
      // The base's tree: each package of the run paired with its namesake there, as a base.
      if (!args.baseline_package.empty())
        throw_usage("--baseline-package and --baseline-packages: give one (a package for every package of the run, "
                    "or a tree to find each one's namesake in)");
      if (!base) base.emplace();
      base->dir = args.baseline_packages;
      std::set<std::string> named;
      for (const auto& [name, dir] : package_tree(args.baseline_packages)) {
        const auto head = std::find_if(packages.begin(), packages.end(),
                                       [&](const LoadedPackage& p) { return p.manifest.name == name; });
        if (head == packages.end()) {
          base_packages_removed.push_back({{"name", name}, {"source", dir}});
          continue;
        }
        auto b = load_package(dir, arch, args.quiet);
        if (!b) return static_cast<int>(ExitCode::usage);
        if (b->manifest.op != head->manifest.op)
          throw_usage("package " + name + " implements op '" + head->manifest.op + "' but its namesake in " +
                      args.baseline_packages + " (" + dir + ") implements '" + b->manifest.op +
                      "': a base must implement the same op");
        b->kernel.name = b->manifest.name + "@" + b->manifest.version;
        base->module_of[b->kernel.name] = dir;
        base_packages.emplace(head->kernel.name, std::move(*b));
      }
    }
    if (!have_device) {
      if (args.no_device_exit_code) {
        std::printf("SKIPPED: %s (the packages are valid and compile; running them needs a GPU)\n", why.c_str());
        return *args.no_device_exit_code;
      }
      throw Error(ErrorKind::usage, why + ": checking a package runs it on a GPU; `kgate validate PKG` checks a "
                                          "package (manifest and NVRTC compile) without one");
    }
  }

  Backend backend;
  if (!packages.empty()) {
    backend = Backend::cuda;
  } else if (args.backend.empty()) {
    backend = cuda::device_available(&why) ? Backend::cuda : Backend::cpu;
    if (backend == Backend::cpu)
      std::fprintf(stderr, "kgate: %s — checking the cpu backend's kernels instead (pass --backend cuda to require a GPU)\n",
                   why.c_str());
  } else {
    backend = parse_backend(args.backend);
    if (backend == Backend::cuda && !cuda::device_available(&why)) {
      if (args.no_device_exit_code) {
        std::printf("SKIPPED: %s\n", why.c_str());
        return *args.no_device_exit_code;
      }
      throw Error(ErrorKind::usage, why + " (--backend cuda needs a GPU; use --backend cpu on machines without one)");
    }
  }

  std::vector<const KernelInfo*> selected;
  if (args.kernels.empty()) {
    // Packages or torch ops named on the command line are what the run checks; otherwise every
    // in-tree kernel of the backend.
    if (torch_ops) {
      for (const auto& k : registered_kernels())
        if (torch_op_memory_note(k.name) && k.backend == backend) selected.push_back(&k);
      if (selected.empty())
        throw_usage(std::string("no --torch-op runs on the ") + backend_name(backend) + " backend (a cpu op is given as cpu/NS::OP=...)");
    } else if (packages.empty()) {
      selected = select_kernels({}, backend);
    }
  } else {
    selected = select_kernels(args.kernels, backend);
  }
  if (selected.empty() && packages.empty())
    throw_usage(std::string("no kernels to check on the ") + backend_name(backend) + " backend");
  // Pairing with the base build: each head kernel with its namesake (or its --pair), under the
  // head's code digest (a copy of the kernel that carries it).
  std::map<std::string, const KernelInfo*> base_of;  // head kernel -> its base
  std::deque<KernelInfo> with_digest;
  nlohmann::json removed = nlohmann::json::array();
  if (base && base->error.empty()) {
    std::map<std::string, std::string> pair_of;  // head -> base name
    for (const auto& p : args.pairs) {
      const auto eq = p.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == p.size())
        throw_usage("--pair " + p + ": expected NEW=OLD (the head's kernel name, '=', its name in the base build)");
      pair_of[p.substr(0, eq)] = p.substr(eq + 1);
    }
    std::set<std::string> paired_bases;
    for (auto& k : selected) {
      const auto named = pair_of.find(k->name);
      const std::string old_name = named == pair_of.end() ? k->name : named->second;
      const auto it = base->kernels.find(old_name);
      if (it == base->kernels.end()) {
        if (named != pair_of.end())
          throw_usage("--pair " + k->name + "=" + old_name + ": the base build has no kernel '" + old_name + "'");
        continue;
      }
      if (it->second.op != k->op || it->second.backend != k->backend)
        throw_usage("kernel '" + k->name + "' (" + k->op + ", " + backend_name(k->backend) + ") is paired with base '" +
                    old_name + "' (" + it->second.op + ", " + backend_name(it->second.backend) +
                    "): a base must implement the same op on the same backend");
      KernelInfo& copy = with_digest.emplace_back(*k);
      const auto digest = head_digests.find(k->name);
      copy.code_digest = digest == head_digests.end() || args.time_unchanged ? std::string() : digest->second;
      k = &copy;
      base_of[copy.name] = &it->second;
      paired_bases.insert(old_name);
    }
    // What the head dropped (a full run only: --kernel picks some on purpose).
    if (args.kernels.empty() && packages.empty())
      for (const auto& [name, bk] : base->kernels)
        if (!paired_bases.count(name) && bk.backend == backend && !bk.mutant)
          removed.push_back({{"name", name}, {"source", bk.source}});
  }
  // --baseline-packages: each package with its namesake's package (timed unless UNCHANGED).
  for (auto& p : packages)
    if (const auto b = base_packages.find(p.kernel.name); b != base_packages.end()) {
      if (args.time_unchanged) p.kernel.code_digest.clear();
      base_of[p.kernel.name] = &b->second.kernel;
    }
  for (const auto& r : base_packages_removed) removed.push_back(r);
  const auto package_baseline = [&](const LoadedPackage& p) -> const KernelInfo* {
    if (baseline) return &baseline->kernel;
    const auto b = base_packages.find(p.kernel.name);
    return b == base_packages.end() ? nullptr : &b->second.kernel;
  };
  // The record of a kernel's base, for its report.
  const auto base_record = [&](const KernelInfo& k, const KernelReport& kr) -> nlohmann::json {
    if (!base) return nullptr;
    const auto it = base_of.find(k.name);
    if (it == base_of.end()) return {{"status", "new"}};
    const KernelInfo& b = *it->second;
    // UNCHANGED where the pipeline said so (same code digest and, on the GPU, the same launches);
    // without a speed phase, where the code digests are equal.
    std::string status = "paired";
    const bool any_speed = std::any_of(kr.speed.begin(), kr.speed.end(), [&](const SpeedComparison& s) { return s.baseline == b.name; });
    const bool unchanged_entry = std::any_of(kr.speed.begin(), kr.speed.end(), [&](const SpeedComparison& s) {
      return s.baseline == b.name && s.decision == Outcome::unchanged;
    });
    if (unchanged_entry || (!any_speed && !k.code_digest.empty() && k.code_digest == b.code_digest)) status = "unchanged";
    if (kr.baseline_correctness && kr.baseline_correctness->failed > 0) status = "base_failed";
    nlohmann::json record = kr.base.is_object() ? kr.base : nlohmann::json::object();  // the pipeline's (launches)
    record.update({{"name", b.name}, {"source", b.source}, {"module", base->module_of.at(b.name)},
                   {"digest", b.code_digest}, {"status", status}});
    // The base commit's op definition where it differs from the head's (op_file_differences): not an
    // error, both sides were judged under the head's; the report lists the fields.
    const std::string* head_text = op_file_text(k.op);  // the definition both were judged under
    if (const auto text = base->op_file_text.find(b.name); text != base->op_file_text.end() && head_text) {
      const auto fields = op_file_differences(text->second, *head_text);
      if (!fields.empty()) {
        record["op_file_changed"] = fields;
        std::string list;
        for (const auto& f : fields) list += (list.empty() ? "" : ", ") + f;
        if (!args.quiet)
          std::fprintf(stderr, "kgate: %s: the base's op file differs from the head's in %s; both are judged under the head's\n",
                       k.name.c_str(), list.c_str());
      }
    }
    return record;
  };
  // --captured: each file must fit every kernel it applies to, and apply to one at least, before
  // anything runs.
  for (const auto& f : args.options.captured) {
    std::vector<std::pair<std::string, std::string>> kernel_ops;  // (kernel, op)
    for (const KernelInfo* k : selected) kernel_ops.emplace_back(k->name, k->op);
    for (const auto& p : packages) kernel_ops.emplace_back(p.kernel.name, p.kernel.op);
    bool applies = false;
    for (const auto& [name, op] : kernel_ops) {
      if (!captured_cases(find_op(op), {f}, args.options.seed, name).empty()) applies = true;
    }
    if (!applies)
      throw_usage("--captured " + f.path + ": its __metadata__ names op '" +
                  read_safetensors_header(f.path).metadata.at("op") + "', which no kernel of this run implements");
  }
  if (!args.shard.empty()) {  // this runner's share of the kernels and packages
    const Shard shard = parse_shard(args.shard);
    std::vector<std::string> names;
    for (const KernelInfo* k : selected) names.push_back(k->name);
    for (const auto& p : packages) names.push_back(p.kernel.name);
    const auto mine = shard_names(names, shard);
    const std::set<std::string> keep(mine.begin(), mine.end());
    selected.erase(std::remove_if(selected.begin(), selected.end(),
                                  [&](const KernelInfo* k) { return keep.count(k->name) == 0; }),
                   selected.end());
    packages.erase(std::remove_if(packages.begin(), packages.end(),
                                  [&](const LoadedPackage& p) { return keep.count(p.kernel.name) == 0; }),
                   packages.end());
    if (!args.quiet && !args.in_worker)
      std::fprintf(stderr, "kgate: shard %d/%d: %zu of %zu kernel(s)/package(s)%s\n", shard.index, shard.count,
                   mine.size(), names.size(), mine.empty() ? " (nothing to check: an empty report is written)" : "");
  }
  if (!args.only.empty()) {  // a worker: keep only its kernel or package
    selected.erase(std::remove_if(selected.begin(), selected.end(),
                                  [&](const KernelInfo* k) { return k->name != args.only; }),
                   selected.end());
    packages.erase(std::remove_if(packages.begin(), packages.end(),
                                  [&](const LoadedPackage& p) { return p.kernel.name != args.only; }),
                   packages.end());
    if (selected.size() + packages.size() != 1) throw_usage("--only " + args.only + ": no such kernel or package in this run");
  }
  const bool isolate = args.isolate && !args.in_worker;
  if (!args.devices.empty() && !args.in_worker && !isolate)
    throw_usage("--devices runs one worker process per GPU: leave out --no-isolate");
  if (!args.sanitize.empty() && !args.in_worker) {
    if (!isolate) throw_usage("--sanitize runs cases in workers under compute-sanitizer: leave out --no-isolate");
    if (backend != Backend::cuda) throw_usage("--sanitize needs the cuda backend: compute-sanitizer checks GPU kernels");
  }

  fs::create_directories(args.out_dir);
  // Isolated runs start no CUDA context here: the workers do the work.
  std::optional<Runner> runner;
  RunnerEnvironment environment;
  if (!isolate) {
    runner.emplace(backend);
    environment = runner->environment();
  }
  RunReport report;
  report.google_benchmark = std::move(google_benchmark);
  report.meta.kgate_version = KGATE_VERSION;
  report.meta.git_sha = git_sha();
  report.meta.command = args.command_line;
  report.meta.backend = backend_name(backend);
  report.meta.device = environment.device;
  report.meta.driver = environment.driver;
  report.meta.cuda = environment.cuda;
  report.meta.torch = environment.torch;
  report.meta.started_at = now_utc();
  report.meta.seed = args.options.seed;
  const auto& o = args.options;
  report.meta.config = {{"cases", o.cases},
                        {"families", o.families},
                        {"rule", o.rule},
                        {"speed", o.speed},
                        {"speed_cases", o.speed_cases},
                        {"delta", o.timing.interleave.delta},
                        {"alpha", o.timing.interleave.alpha},
                        {"time_budget_s", o.timing.interleave.time_budget_s},
                        {"flush_l2", o.timing.flush_l2},
                        {"inconclusive_fails", args.inconclusive_fails}};
  if (!args.packages.empty()) report.meta.config["packages"] = args.packages;
  if (!args.shard.empty()) report.meta.config["shard"] = args.shard;
  if (!args.baseline_package.empty()) report.meta.config["baseline_package"] = args.baseline_package;
  if (base) {
    report.meta.base = {{"dir", args.baseline_build},
                        {"build", base->build},
                        {"head_build", head_build_record},
                        {"error", base->error},
                        {"warnings", base->warnings}};
    if (!base->torch_libraries.empty()) report.meta.base["torch_libraries"] = base->torch_libraries;
    if (const char* ref = std::getenv("KGATE_BASE_REF")) report.meta.base["ref"] = ref;
    if (const char* sha = std::getenv("KGATE_BASE_SHA")) report.meta.base["sha"] = sha;
    for (const auto& w : base->warnings) std::fprintf(stderr, "kgate: warning: %s\n", w.c_str());
    report.removed = removed;
  }
  if (!sandbox.empty()) report.meta.config["sandbox"] = sandbox;
  if (o.atol) report.meta.config["atol"] = *o.atol;
  if (o.rtol) report.meta.config["rtol"] = *o.rtol;

  CheckOptions options = args.options;
  options.baseline_is_base = base.has_value();
  options.in_worker = args.in_worker;
  // Every speed comparison of the run is Holm-corrected with every other: each must be able to
  // decide at that strictness. A kernel paired with its base is timed against it and against eager;
  // an UNCHANGED one is not timed at all.
  int64_t timed_pairs = 0;
  for (const auto& p : packages) {
    const KernelInfo* b = package_baseline(p);
    timed_pairs += !b ? 1 : p.kernel.code_digest.empty() || p.kernel.code_digest != b->code_digest ? 2 : 0;
  }
  for (const KernelInfo* k : selected) {
    const auto b = base_of.find(k->name);
    if (b == base_of.end()) ++timed_pairs;
    else if (k->code_digest.empty() || k->code_digest != b->second->code_digest) timed_pairs += 2;
  }
  const int64_t run_comparisons =
      args.run_comparisons > 0 ? args.run_comparisons : std::max<int64_t>(1, timed_pairs) * options.speed_cases;
  options.run_comparisons = run_comparisons;
  if (options.speed) report.meta.config["run_comparisons"] = run_comparisons;
  // A worker notes each case before it runs it: if the kernel crashes or hangs the process, its
  // parent reads which case did it, and goes on after it in a fresh worker.
  std::shared_ptr<int> progress_fd;
  if (args.in_worker) {
    fs::create_directories(args.out_dir);
    const int fd = ::open((fs::path(args.out_dir) / "progress").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
      progress_fd = std::shared_ptr<int>(new int(fd), [](int* f) {
        ::close(*f);
        delete f;
      });
      options.on_case = [progress_fd](size_t index, size_t total, const Case& c, const CaseResult* r) {
        const std::string line = progress_line(index, total, c, r);
        if (::write(*progress_fd, line.data(), line.size()) < 0) return;  // progress only: never fatal
      };
    }
  }
  options.resume_at = args.resume_at;
  options.resumed_after_failure = args.resumed_after_failure;
  options.reference_copies_at = args.reference_copies_at;
  if (!args.only_case.empty()) {
    options.only_cases = {Case::from_id(args.only_case)};
    options.speed = false;
    options.shrink = false;
    options.behaviour_checks = false;
    options.null_calibration_cases = 0;
  }
  const Progress progress(args.quiet);
  if (!args.quiet) options.progress = progress;
  const fs::path out(args.out_dir);
  auto write_reports = [&] {
    report.meta.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    write_report_files(report, out);
  };
  const size_t total = selected.size() + packages.size();
  // The i-th of the run: the in-tree kernels first, then the packages.
  const auto kernel_at = [&](size_t i) -> const KernelInfo& {
    return i < selected.size() ? *selected[i] : packages[i - selected.size()].kernel;
  };
  if (isolate) {
    std::mutex meta_mutex;  // report.meta, written from each GPU's thread
    // One kernel or package, in workers on `device` (nullopt: the GPU selected for this process).
    const auto check_isolated = [&](size_t i, std::optional<int> device) -> std::optional<KernelReport> {
      const double started = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const KernelInfo& k = kernel_at(i);
      if (!args.quiet)
        std::fprintf(stderr, "[%zu/%zu] %s (%s, %s) in a worker process\n", i + 1, total, k.name.c_str(), k.op.c_str(),
                     backend_name(backend));
      const fs::path worker_out = out / "workers" / k.name;
      std::vector<std::string> child = args.argv;
      child.insert(child.end(), {"--only", k.name, "--out", worker_out.string(), "--in-worker", "--run-comparisons",
                                 std::to_string(run_comparisons)});
      if (device) child.insert(child.end(), {"--device", std::to_string(*device)});
      // The worker runs the backend decided here (and does not say again why it fell back).
      if (args.backend.empty() && packages.empty()) child.insert(child.end(), {"--backend", backend_name(backend)});
      // A fault kills its worker's CUDA context: the worker stops there, and a fresh one goes on
      // with the remaining cases (at most kMaxFaultRestarts times).
      std::optional<KernelReport> merged;
      std::string worker_device;  // as the worker named it (name, ordinal, UUID)
      std::string said_all;
      uint64_t printed = 0, dropped = 0;
      int64_t resume_at = 0, reference_copies_at = -1;
      for (int restarts = 0;; ++restarts) {
        std::vector<std::string> attempt = child;
        if (resume_at > 0 || reference_copies_at >= 0)
          attempt.insert(attempt.end(), {"--resume-at", std::to_string(resume_at)});
        if (merged && (merged->outcome == Outcome::failed || merged->correctness.failed > 0))
          attempt.push_back("--resumed-after-failure");
        if (reference_copies_at >= 0)
          attempt.insert(attempt.end(), {"--reference-copies-at", std::to_string(reference_copies_at)});
        std::error_code ignored;
        fs::remove(worker_out / "progress", ignored);  // the watch must not read the last worker's
        auto w = run_worker(attempt, (worker_out / "report.json").string(), args.kernel_timeout_s,
                            CaseWatch(worker_out / "progress", args.case_timeout_s));
        // Its output, bounded and made safe, in the log and in the report.
        const std::string said = w.output.empty() ? std::string() : safe_log_text(w.output.text());
        if (!said.empty()) {
          std::fputs(said.c_str(), stderr);
          if (said.back() != '\n') std::fputc('\n', stderr);
        }
        if (w.output.dropped_bytes() > 0)
          std::fprintf(stderr, "kgate: %s printed %llu bytes; %llu of them are not shown (the report keeps "
                               "the first and last lines)\n",
                       k.name.c_str(), static_cast<unsigned long long>(w.output.total_bytes()),
                       static_cast<unsigned long long>(w.output.dropped_bytes()));
        said_all += said;
        printed += w.output.total_bytes();
        dropped += w.output.dropped_bytes();
        if (!w.ok) {
          std::fprintf(stderr, "kgate: %s: %s\n", k.name.c_str(), w.failure.c_str());
          // What the worker said last about its end ("kgate: internal error: CUDA error: ..."):
          // the crash's cause, in the kernel's message.
          std::string last_words;
          for (size_t at = 0; at < said.size();) {
            const size_t end = std::min(said.find('\n', at), said.size());
            const std::string line = said.substr(at, end - at);
            if (line.rfind("kgate: internal error: ", 0) == 0 || line.rfind("kgate: error: ", 0) == 0)
              last_words = line.substr(line.find(": ", 6) + 2);
            at = end + 1;
          }
          const std::string failure = last_words.empty() ? w.failure : w.failure + ": " + last_words;
          // What the worker noted: the cases it finished keep their results, and the case it was
          // running when it crashed or hung is that case's failure.
          const WorkerProgress progress = read_progress(worker_out / "progress");
          if (!progress.finished.empty() || progress.started || progress.done) {
            if (!merged) {
              merged = failed_kernel_report(k.name, k.op, backend_name(backend), k.source, "", 0);
              merged->correctness.cases = progress.total;
            }
            auto& c = merged->correctness;
            const auto result_of = [&](const std::string& id, Outcome outcome, const std::string& rule,
                                       const std::string& message) {
              CaseResult cr;
              cr.kcase = Case::from_id(id);
              cr.outcome = outcome;
              cr.rule = rule;
              cr.message = message;
              cr.repro = repro_command(k, cr.kcase);
              return cr;
            };
            // The smallest case this worker failed on before it died: the minimal case, if none is yet.
            std::optional<CaseResult> smallest;
            for (const auto& f : progress.finished) {
              if (f.index < resume_at) continue;
              if (f.rule == "reference_error") ++c.reference_errors;
              else if (f.outcome == "skipped") ++c.skipped;
              else if (f.outcome == "failed") {
                ++c.failed;
                CaseResult failed_case = result_of(f.id, Outcome::failed, f.rule, f.message);
                if (!smallest || failed_case.kcase.numel_hint() < smallest->kcase.numel_hint()) smallest = failed_case;
                if (c.failures.size() < 10) c.failures.push_back(std::move(failed_case));
              } else {
                ++c.passed;
              }
            }
            merged->outcome = Outcome::failed;
            merged->seconds += w.seconds;
            if (merged->message.empty()) merged->message = failure;  // the first crash or hang
            c.not_run = 0;
            if (smallest && (!c.minimal || c.minimal->rule == "crash" || c.minimal->rule == "fault" ||
                             smallest->kcase.numel_hint() < c.minimal->kcase.numel_hint()))
              c.minimal = smallest;  // a wrong value on a smaller case than the crash (not shrunk: its worker died)
            if (progress.started && *progress.started >= resume_at) {
              ++c.failed;
              const CaseResult hit = result_of(progress.started_id, Outcome::failed, w.hung ? "hang" : "crash",
                                               "kernel '" + k.name + "': " + failure);
              if (c.failures.size() < 10) c.failures.push_back(hit);
              c.faulted.push_back(progress.started_id);
              if (!c.minimal) c.minimal = hit;  // it ran and hung or crashed (a crash is shrunk below)
              c.resume_at = *progress.started + 1;
              c.not_run = progress.total - *progress.started - 1;
            } else if (progress.done) {
              merged->message = failure + ", after the correctness cases (in the behaviour checks or the timing)";
            }
            // A hang would likely hang again, each time after the whole --kernel-timeout: stop there.
            if (!w.hung && c.not_run > 0 && restarts + 1 < kMaxFaultRestarts) {
              resume_at = c.resume_at;
              reference_copies_at = -1;  // (a crash: the case after it runs as it is)
              if (!args.quiet)
                std::fprintf(stderr, "kgate: %s crashed its worker on case %s; going on with the %lld remaining cases in a fresh worker\n",
                             k.name.c_str(), progress.started_id.c_str(), static_cast<long long>(c.not_run));
              continue;
            }
            if (c.not_run > 0)
              c.warnings.push_back(std::to_string(c.not_run) + " cases were not run after case " + progress.started_id +
                                   (w.hung ? " hung (a hung kernel would hang again)" : " crashed its worker, the last of too many"));
            break;
          }
          if (!merged) {
            merged = failed_kernel_report(k.name, k.op, backend_name(backend), k.source, failure, w.seconds);
          } else {
            // The cases before this worker ran and keep their results; the rest did not run.
            merged->outcome = Outcome::failed;
            merged->correctness.warnings.push_back("the worker that went on from case " + std::to_string(resume_at + 1) +
                                                   " failed: " + failure + "; the cases from there were not run");
          }
          break;
        }
        worker_device = w.report.meta.device;
        {
          std::lock_guard<std::mutex> lock(meta_mutex);  // workers on several GPUs report at once
          // How the workers were confined: the first one's answer, unless a later one was not.
          if (const auto it = w.report.meta.config.find("sandbox"); it != w.report.meta.config.end() && it->is_string()) {
            const std::string said_sandbox = it->get<std::string>();
            const auto have = report.meta.config.find("sandbox");
            if (have == report.meta.config.end() || said_sandbox.rfind("none", 0) == 0) {
              if (said_sandbox.rfind("none", 0) == 0 && !args.quiet &&
                  (have == report.meta.config.end() || *have != said_sandbox))
                std::fprintf(stderr, "kgate: warning: workers run unconfined (%s); --require-sandbox makes this an error\n",
                             said_sandbox.c_str() + 6);
              report.meta.config["sandbox"] = said_sandbox;
            }
          }
          if (report.meta.device.empty()) {
            report.meta.device = w.report.meta.device;
            report.meta.driver = w.report.meta.driver;
            report.meta.cuda = w.report.meta.cuda;
            report.meta.torch = w.report.meta.torch;
          }
        }
        if (w.report.kernels.empty()) break;
        KernelReport part = std::move(w.report.kernels.front());
        // A worker stops at its first lost context: the kernel's fault, or the reference's.
        const bool reference_fault = !part.correctness.reference_faulted.empty();
        if (!merged) merged = std::move(part);
        else merge_resumed(*merged, std::move(part));
        const auto& c = merged->correctness;
        if (c.not_run == 0) break;
        if (restarts + 1 >= kMaxFaultRestarts) {
          merged->correctness.warnings.push_back(
              std::to_string(c.not_run) + " cases were not run: the kernel faulted " + std::to_string(c.faulted.size()) +
              " times and its op's reference " + std::to_string(c.reference_faulted.size()) +
              ", and kgate starts at most " + std::to_string(kMaxFaultRestarts) + " workers per kernel");
          // Cases never run leave the kernel unproven (after faults of the reference alone): never a pass.
          if (merged->outcome == Outcome::passed) merged->outcome = Outcome::invalid;
          break;
        }
        resume_at = c.resume_at;
        reference_copies_at = c.reference_copies_at;
        if (!args.quiet)
          std::fprintf(stderr, "kgate: %s%s faulted on case %s; going on with the %lld remaining cases in a fresh worker%s\n",
                       reference_fault ? "the reference of " : "", k.name.c_str(),
                       (reference_fault ? c.reference_faulted : c.faulted).back().c_str(), static_cast<long long>(c.not_run),
                       reference_copies_at >= 0 ? " (that case again, its reference on contiguous copies)" : "");
      }
      if (merged) {
        if (!merged->correctness.faulted.empty() && args.options.shrink)
          shrink_fault_in_workers(*merged, k, child, worker_out, args);
        if (!args.sanitize.empty())
          sanitize_in_workers(*merged, k, i < selected.size() ? nullptr : &packages[i - selected.size()], child,
                              worker_out, args);
        merged->worker_output = said_all;  // each part made safe and bounded already
        merged->worker_output_bytes = printed;
        merged->worker_output_dropped_bytes = dropped;
        merged->worker_device = worker_device.empty() ? std::string(backend_name(backend)) : worker_device;
        merged->worker_ordinal = device.value_or(-1);
        merged->worker_start_s = started;
        merged->worker_end_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
      return merged;
    };
    if (args.devices.size() <= 1) {
      const std::optional<int> device = args.devices.empty() ? std::nullopt : std::optional<int>(args.devices.front());
      for (size_t i = 0; i < total; ++i) {
        if (auto kr = check_isolated(i, device)) report.kernels.push_back(std::move(*kr));
        write_reports();  // after every kernel: a crash later loses nothing already measured
      }
    } else {
      // One thread per GPU takes the next kernel when its last one is done: a GPU never runs two.
      // The report keeps the kernels' order, and is written after each one as before.
      std::vector<std::optional<KernelReport>> done(total);
      std::atomic<size_t> next{0};
      std::mutex done_mutex;
      std::exception_ptr error;  // the first error of any thread: no more kernels are dealt
      const auto publish = [&](size_t i, std::optional<KernelReport> kr) {
        std::lock_guard<std::mutex> lock(done_mutex);
        done[i] = std::move(kr);
        std::lock_guard<std::mutex> meta_lock(meta_mutex);
        report.kernels.clear();
        for (const auto& d : done)
          if (d) report.kernels.push_back(*d);
        write_reports();
      };
      const auto serve = [&](int device) {
        try {
          DeviceHealth health;
          for (size_t i = next++; i < total; i = next++) {
            auto kr = check_isolated(i, device);
            // A GPU that became unusable (lost, uncorrected ECC errors, no device) is retired: the
            // kernel it was running loses its results, and the others go to the GPUs left.
            const std::string why = kr ? health.trouble(device, *kr) : std::string();
            if (why.empty()) {
              publish(i, std::move(kr));
              continue;
            }
            const KernelInfo& k = kernel_at(i);
            const std::string gpu = "GPU " + std::to_string(device) + (health.uuid.empty() ? "" : " (" + health.uuid + ")");
            KernelReport lost = failed_kernel_report(
                k.name, k.op, backend_name(backend), k.source,
                gpu + " became unusable while this kernel ran (" + why + "): its results are not kept, and kgate deals no more kernels to that GPU",
                kr->seconds);
            lost.worker_device = kr->worker_device;
            lost.worker_ordinal = kr->worker_ordinal;
            lost.worker_start_s = kr->worker_start_s;
            lost.worker_end_s = kr->worker_end_s;
            if (!args.quiet) std::fprintf(stderr, "kgate: %s became unusable (%s): retired; %s is lost\n", gpu.c_str(), why.c_str(), k.name.c_str());
            {
              std::lock_guard<std::mutex> meta_lock(meta_mutex);
              report.meta.config["retired_devices"].push_back(
                  {{"ordinal", device}, {"uuid", health.uuid}, {"why", why}, {"kernel", k.name}});
            }
            publish(i, std::move(lost));
            return;
          }
        } catch (...) {
          std::lock_guard<std::mutex> lock(done_mutex);
          if (!error) error = std::current_exception();
          next = total;
        }
      };
      std::vector<std::thread> gpus;
      for (int d : args.devices) gpus.emplace_back(serve, d);
      for (auto& t : gpus) t.join();
      if (error) std::rethrow_exception(error);  // what was measured is in the report already
      // Every GPU retired before the work was done: the rest were never run.
      for (size_t i = 0; i < total; ++i)
        if (!done[i]) {
          const KernelInfo& k = kernel_at(i);
          publish(i, failed_kernel_report(k.name, k.op, backend_name(backend), k.source,
                                          "not run: every GPU of --devices became unusable (report meta.config.retired_devices)",
                                          0));
        }
    }
  }
  for (size_t i = 0; i < selected.size() && !isolate; ++i) {
    if (!args.quiet)
      std::fprintf(stderr, "[%zu/%zu] %s (%s, %s)\n", i + 1, total, selected[i]->name.c_str(),
                   selected[i]->op.c_str(), backend_name(backend));
    const auto b = base_of.find(selected[i]->name);
    report.kernels.push_back(check_kernel(*runner, *selected[i], options, b == base_of.end() ? nullptr : b->second));
    report.kernels.back().base = base_record(*selected[i], report.kernels.back());
    progress.end_line();
    write_reports();  // after every kernel: a crash later loses nothing already measured
  }
  for (size_t i = 0; i < packages.size() && !isolate; ++i) {
    const auto& p = packages[i];
    if (!args.quiet)
      std::fprintf(stderr, "[%zu/%zu] package %s %s (%s, %s)%s\n", selected.size() + i + 1, total,
                   p.manifest.name.c_str(), p.manifest.version.c_str(), p.manifest.op.c_str(), p.kernel.source.c_str(),
                   package_baseline(p) ? (" against baseline " + package_baseline(p)->name).c_str() : "");
    report.kernels.push_back(check_kernel(*runner, p.kernel, package_options(options, p), package_baseline(p)));
    report.kernels.back().base = base_record(p.kernel, report.kernels.back());
    progress.end_line();
    write_reports();
  }
  if (args.in_worker) return static_cast<int>(report.exit_code(args.inconclusive_fails));  // the parent judges
  report.meta.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return conclude(report, args.out_dir, args.inconclusive_fails);
}

}  // namespace kgate::cli
