// kgate check: its options, and the run: the plan (check_plan.hpp), the worker sandbox, the
// report's meta and the run's options, then every kernel and package in workers (check_workers.hpp)
// or, with
// --no-isolate, in this process, the reports written after each one.
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
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "cli/base_build.hpp"
#include "cli/check_plan.hpp"
#include "cli/check_workers.hpp"
#include "cli/output.hpp"
#include "cli/progress.hpp"
#include "cli/report_files.hpp"
#include "cli/sanitize.hpp"
#include "cli/worker.hpp"
#include "core/config.hpp"
#include "core/cost.hpp"
#include "core/device_share.hpp"
#include "core/error.hpp"
#include "core/op_file.hpp"
#include "core/safe_text.hpp"
#include "core/safetensors.hpp"
#include "core/sha256.hpp"
#include "gates/correctness/rules.hpp"
#include "gates/props/shrink.hpp"
#include "references/catalogue.hpp"
#include "report/text.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/package/package_kernel.hpp"
#include "runtime/package/validate.hpp"
#include "runtime/runner.hpp"
#include "runtime/torch_op.hpp"

namespace kgate::cli {
namespace fs = std::filesystem;

CLI::App* add_check_command(CLI::App& app, CheckArgs& args) {
  auto& opt = args.options;
  auto* cmd =
      app.add_subcommand("check",
                         "Check kernels and packages: correctness, then speed against the eager "
                         "reference (and a baseline package)");
  cmd->add_option(
         "packages", args.request.packages,
         "Exported package directories (kgate.json) to check on the GPU; cases cover both sides of "
         "each guard")
      ->check(CLI::Validator(
          [](std::string& path) -> std::string {
            std::error_code ec;
            if (std::filesystem::is_directory(path, ec)) return "";
            for (const auto& k : kgate::registered_kernels())
              if (k.name == path)
                return "'" + path +
                       "' is a kernel, not a package directory: check it with --kernel " + path;
            return "package directory " + path +
                   " does not exist (a kernel is named with --kernel NAME)";
          },
          "DIR"));
  // One value per --kernel / --family, so that package directories after them stay positional.
  cmd->add_option(
         "--kernel", args.request.kernels,
         "Kernel to check (repeatable; default: all but mutants, unless packages are given)")
      ->allow_extra_args(false);
  cmd->add_option(
      "--baseline-package", args.baseline_package,
      "Previous version of the packages: same cases run on it, timed against it interleaved");
  cmd->add_option(
         "--baseline-build", args.baseline_build,
         "Build directory of the base commit (its kgate-modules): each kernel is paired with its "
         "namesake there, run on the same cases, and timed against it and against eager")
      ->type_name("DIR");
  cmd->add_option("--baseline-torch-library", args.baseline_torch_libraries,
                  "The base commit's build of a --torch-library: each --torch-op is paired with "
                  "its op there "
                  "(repeatable)")
      ->type_name("PATH")
      ->allow_extra_args(false);
  cmd->add_option("--baseline-packages", args.baseline_packages,
                  "The base's tree of packages: each package is paired with its namesake (manifest "
                  "name) there")
      ->type_name("DIR");
  cmd->add_option("--pair", args.pairs, "Pair a renamed kernel with its base: NEW=OLD (repeatable)")
      ->type_name("NEW=OLD")
      ->allow_extra_args(false);
  cmd->add_flag(
      "--require-base", args.require_base,
      "Exit 4 when the base build cannot be used (default: gate against eager alone, and say why)");
  cmd->add_flag("--time-unchanged", args.time_unchanged,
                "Time kernels whose code equals their base's too (default: UNCHANGED, not timed)");
  cmd->add_option("--arch", args.request.arch,
                  "NVRTC target for packages (default: the GPU's, e.g. sm_90)");
  cmd->add_option("--backend", args.request.backend,
                  "cuda or cpu (default: cuda when a GPU is present)")
      ->check(CLI::IsMember({"cuda", "cpu"}));
  cmd->add_option("--seed", opt.seed, "Master seed: every case derives from it")
      ->capture_default_str();
  cmd->add_option("--cases", opt.cases, "Correctness cases per kernel")
      ->capture_default_str()
      ->check(above_zero());
  add_family_option(*cmd, opt.families, check_families(),
                    "Case families (random, ragged, extreme, special, layout, long, huge); "
                    "repeatable, or a comma list: random,ragged");
  cmd->add_option("--rule", opt.rule,
                  "Correctness rule: " + kgate::correctness::rule_list() +
                      " (default: the op's; conditioned for ops that declare their conditioning, "
                      "else eager_relative for f16 and bf16 outputs)")
      ->check(CLI::IsMember(kgate::correctness::rule_names()));
  cmd->add_option("--config", args.config_path,
                  "Config file (kgate-config/1): settings per op and kernel")
      ->check(CLI::ExistingFile);
  cmd->add_option("--atol", opt.atol, "Absolute tolerance (overrides the op's default)")
      ->check(tolerance_value());
  cmd->add_option("--rtol", opt.rtol, "Relative tolerance (overrides the op's default)")
      ->check(tolerance_value());
  cmd->add_option(
         "--devices", args.devices_text,
         "GPUs to use at once: 'all' or ordinals such as 0,1. Kernels and packages are dealt to "
         "one "
         "worker per GPU, and a GPU never runs two at once; one report, Holm over the whole run")
      ->type_name("all|N,M,...");
  cmd->add_option("--jobs", args.jobs,
                  "Workers at once on each GPU: their correctness cases run side by side, and a "
                  "kernel's timing (and its huge cases) waits until it has the GPU alone")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->add_option_function<std::vector<std::string>>(
         "--captured",
         [&opt](const std::vector<std::string>& files) {
           for (const auto& f : files) opt.captured.push_back({f, f});
         },
         "Captured inputs (safetensors: one call's input tensors by the op's input names) run as "
         "fixed "
         "cases, each reported under its file name; repeatable")
      ->check(CLI::ExistingFile)
      ->allow_extra_args(false);
  cmd->add_flag_callback(
      "--no-shrink", [&opt] { opt.shrink = false; }, "Do not shrink failing cases");
  cmd->add_flag_callback(
      "--no-speed", [&opt] { opt.speed = false; }, "Skip the speed gate");
  cmd->add_option("--speed-cases", opt.speed_cases, "Shapes timed per kernel")
      ->capture_default_str()
      ->check(above_zero());
  cmd->add_option("--delta", opt.timing.interleave.delta,
                  "Minimum slowdown that counts as a regression")
      ->capture_default_str()
      ->check(delta_value());
  cmd->add_option("--alpha", opt.timing.interleave.alpha, "False-positive rate per comparison")
      ->capture_default_str()
      ->check(alpha_value());
  cmd->add_option("--time-budget", opt.timing.interleave.time_budget_s,
                  "Seconds of timing per comparison")
      ->capture_default_str()
      ->check(time_budget_value());
  cmd->add_flag(
      "--fill-budget", opt.timing.interleave.fill_budget,
      "After the first look, let each stage grow (to 16x) to spend the time budget: a fast "
      "kernel's interval narrows, and smaller slowdowns above --delta are found");
  opt.timing.interleave.growth_s = speed::kDefaultBudgetGrowth;
  cmd->add_option("--budget-growth", opt.timing.interleave.growth_s,
                  "Seconds the whole run may add to time budgets to decide comparisons the budget "
                  "left undecided, where the estimate says more blocks would (0: never)")
      ->capture_default_str()
      ->check(time_budget_value());
  cmd->add_flag("--warm", args.warm, "Time with a warm L2 (default: flushed between launches)");
  cmd->add_flag("--cost", args.cost,
                "Measure where each kernel's check spends its time (startup, context, compile, "
                "probe, generate, kernel, reference, oracle, judge, behaviour, base, shrink, "
                "warmup, timing, and wait: for the GPU under --jobs; and by case family): "
                "report.json's cost_s and cost_family_s, and tables; waits for the GPU at each "
                "phase's ends, so the run itself is slower");
  cmd->add_flag_callback(
      "--no-isolate", [&args] { args.isolate = false; },
      "Run every kernel in this process (default: one worker process each, under a watchdog)");
  cmd->add_option("--case-timeout", args.case_timeout_s,
                  "Seconds a correctness case may run before it counts as hung: max(this, 20 x the "
                  "slowest case "
                  "so far), at most max(this, 600)")
      ->capture_default_str()
      ->check(above_zero());
  cmd->add_option("--kernel-timeout", args.kernel_timeout_s,
                  "Seconds before a kernel's worker counts as hung and is killed")
      ->capture_default_str()
      ->check(timeout_value());
  cmd->add_option(
         "--sanitize", args.sanitize,
         "Run each kernel's largest case of each family (up to 2^20 elements) again under NVIDIA "
         "compute-sanitizer with this tool, each in its own worker; a finding fails its case")
      ->check(CLI::IsMember(sanitizer_tools()));
  cmd->add_option("--sanitize-cases", args.sanitize_cases, "Cases per kernel under --sanitize")
      ->capture_default_str()
      ->check(above_zero());
  cmd->add_option("--only", args.request.only, "")->group("");  // internal: the worker's kernel
  cmd->add_flag("--in-worker", opt.worker.in_worker, "")->group("");
  cmd->add_option("--resume-at", opt.worker.resume_at, "")->group("");  // internal: after a fault
  cmd->add_flag("--resumed-after-failure", opt.worker.resumed_after_failure, "")
      ->group("");  // internal
  cmd->add_option("--reference-copies-at", opt.worker.reference_copies_at, "")
      ->group("");  // internal
  cmd->add_option("--observed-sizes", args.observed_sizes, "")
      ->group("");  // internal: a fresh worker
  cmd->add_option("--run-comparisons", opt.worker.run_comparisons, "")
      ->group("");  // internal: Holm's m
  cmd->add_option("--growth-left", opt.worker.growth_left_s, "")
      ->group("");  // internal: the budget growth the kernels before left
  cmd->add_option("--device-share", opt.worker.device_share, "")
      ->group("");                                           // internal: --jobs, the device's lock
  cmd->add_option("--case", args.only_case, "")->group("");  // internal: shrinking a fault
  cmd->add_option("--out", args.out_dir, "Directory for report.json, junit.xml and summary.md")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->capture_default_str();
  add_format_option(*cmd, args.formats, format_names(report::file_writers()));
  cmd->add_option(
         "--benchmark-json", args.benchmark_json,
         "Google Benchmark JSON output (--benchmark_out=F --benchmark_out_format=json) to keep in "
         "report.json (repeatable; informational, decides nothing)")
      ->type_name("FILE")
      ->allow_extra_args(false);
  cmd->add_option(
      "--shard", args.request.shard,
      "Check only shard i of n (i/n): the kernels and packages, sorted by name, dealt round-robin; "
      "join the shards' reports with kgate merge");
  cmd->add_option(
         "--fragile-margin", args.fragile_margin,
         "Worst margin above which a passing kernel gets a FRAGILE warning (default: the config's "
         "fragile_margin, else 0.8)")
      ->check(fragile_margin_value());
  cmd->add_flag("--inconclusive-fails", args.inconclusive_fails,
                "Exit 3 when a speed decision is inconclusive");
  cmd->add_option(
      "--no-device-exit-code", args.request.no_device_exit_code,
      "Exit with this code (e.g. 77 = SKIPPED for CTest) when --backend cuda finds no GPU");
  cmd->add_flag("-q,--quiet", args.quiet, "No progress lines");
  return cmd;
}

void resolve_check_args(const CLI::App& check, CheckArgs& args) {
  auto& opt = args.options;
  opt.timing.flush_l2 = !args.warm;
  if (!args.config_path.empty())
    opt.config = load_config(args.config_path, correctness::rule_names());
  for (const auto& p : opt.config.op_files) add_ops_path(p);
  if (check.count("--cases")) opt.cli.cases = opt.cases;
  if (check.count("--family")) opt.cli.families = opt.families;
  if (check.count("--delta")) opt.cli.delta = opt.timing.interleave.delta;
  if (check.count("--alpha")) opt.cli.alpha = opt.timing.interleave.alpha;
  if (check.count("--time-budget")) opt.cli.time_budget_s = opt.timing.interleave.time_budget_s;
  if (args.fragile_margin) opt.cli.fragile_margin = args.fragile_margin;
}

namespace {

// The report's meta before anything runs: the versions, the machine (of this process; workers
// fill it in for an isolated run), the settings, the base.
RunReport start_report(const CheckArgs& args, const CheckPlan& plan,
                       const RunnerEnvironment& environment, const std::string& sandbox) {
  RunReport report;
  report.meta.kgate_version = KGATE_VERSION;
  report.meta.git_sha = git_sha();
  report.meta.command = args.command_line;
  report.meta.backend = backend_name(plan.backend);
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
  if (!args.request.packages.empty()) report.meta.config["packages"] = args.request.packages;
  if (!args.request.shard.empty()) report.meta.config["shard"] = args.request.shard;
  if (!args.baseline_package.empty())
    report.meta.config["baseline_package"] = args.baseline_package;
  if (plan.base) {
    report.meta.base = {{"dir", args.baseline_build},
                        {"build", plan.base->build},
                        {"head_build", plan.head_build_record},
                        {"error", plan.base->error},
                        {"warnings", plan.base->warnings}};
    if (!plan.base->torch_libraries.empty())
      report.meta.base["torch_libraries"] = plan.base->torch_libraries;
    if (const char* ref = std::getenv("KGATE_BASE_REF")) report.meta.base["ref"] = ref;
    if (const char* sha = std::getenv("KGATE_BASE_SHA")) report.meta.base["sha"] = sha;
    if (!args.in_worker())  // (a worker's report carries them; its parent says them once)
      for (const auto& w : plan.base->warnings)
        std::fprintf(stderr, "kgate: warning: %s\n", w.c_str());
    report.removed = plan.removed;
  }
  report.not_checked = plan.not_checked;
  if (!sandbox.empty()) report.meta.config["sandbox"] = sandbox;
  if (o.timing.interleave.fill_budget) report.meta.config["fill_budget"] = true;
  if (o.speed) report.meta.config["budget_growth_s"] = o.timing.interleave.growth_s;
  if (args.cost) report.meta.config["cost"] = true;
  if (o.atol) report.meta.config["atol"] = *o.atol;
  if (o.rtol) report.meta.config["rtol"] = *o.rtol;
  return report;
}

// --cost: each phase's seconds over the run's kernels, the largest first, with its share of their
// sum and the kernel that spent the most in it.
void print_cost(const RunReport& report) {
  std::map<std::string, double> total;
  std::map<std::string, std::pair<double, std::string>> most;
  double all = 0;
  for (const auto& k : report.kernels)
    for (const auto& [phase, s] : k.cost_s) {
      total[phase] += s;
      all += s;
      if (s > most[phase].first) most[phase] = {s, k.name};
    }
  if (total.empty()) return;
  std::vector<std::pair<std::string, double>> rows(total.begin(), total.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  std::fprintf(stderr, "\ncost per phase (%zu kernels, %.2f s in phases, run %.2f s):\n",
               report.kernels.size(), all, report.meta.seconds);
  for (const auto& [phase, s] : rows)
    std::fprintf(stderr, "  %-10s %8.2f s %5.1f%%  (most: %s, %.2f s)\n", phase.c_str(), s,
                 all > 0 ? 100 * s / all : 0.0, most[phase].second.c_str(), most[phase].first);
  const auto ahead =
      std::count_if(report.kernels.begin(), report.kernels.end(),
                    [](const KernelReport& k) { return k.worker_started_ahead_s >= 0; });
  if (ahead > 0)
    std::fprintf(stderr,
                 "  (%lld of %zu workers were started ahead, while the kernel before ran: their "
                 "startup counts from when they got their kernel)\n",
                 static_cast<long long>(ahead), report.kernels.size());
  // The same correctness cases again, by family: where the long and huge families' time goes.
  std::map<std::string, std::pair<double, int64_t>> family;
  std::map<std::string, std::pair<double, std::string>> most_family;
  for (const auto& k : report.kernels)
    for (const auto& [f, sc] : k.cost_family_s) {
      family[f].first += sc.first;
      family[f].second += sc.second;
      if (sc.first > most_family[f].first) most_family[f] = {sc.first, k.name};
    }
  if (family.empty()) return;
  std::vector<std::pair<std::string, std::pair<double, int64_t>>> by(family.begin(), family.end());
  std::sort(by.begin(), by.end(),
            [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::fprintf(stderr,
               "correctness cases by family, and the checks that run cases again (whole; the "
               "phases above overlap them):\n");
  for (const auto& [f, sc] : by) {
    char per[48] = "";
    if (sc.second > 0)
      std::snprintf(per, sizeof per, "%6lld cases %8.2f ms/case", static_cast<long long>(sc.second),
                    1e3 * sc.first / static_cast<double>(sc.second));
    std::fprintf(stderr, "  %-20s %8.2f s %-28s (most: %s, %.2f s)\n", f.c_str(), sc.first, per,
                 most_family[f].second.c_str(), most_family[f].first);
  }
}

}  // namespace

int run_check(const CheckArgs& args) {
  const auto t0 = std::chrono::steady_clock::now();
  CheckPlan plan;
  // A worker confines itself before it starts CUDA or runs anything of a package or an op file.
  std::vector<std::string> readable = args.request.packages;
  readable.push_back(args.baseline_package);
  if (!args.baseline_packages.empty()) readable.push_back(args.baseline_packages);
  // The head's own build, when its compiled kernels run: what a kernel reads from its build (an
  // autotuned configuration) it reads in the worker too, as the base's kernels read theirs. (A run
  // of packages or torch ops alone keeps them to their own files.)
  // (--torch-op kernels are registered before run_check; the selection below reads this too.)
  plan.torch_ops =
      std::any_of(registered_kernels().begin(), registered_kernels().end(),
                  [](const KernelInfo& k) { return torch_op_memory_note(k.name) != nullptr; });
  if (!args.request.kernels.empty() || (args.request.packages.empty() && !plan.torch_ops))
    if (const std::string dir = head_build_dir(); !dir.empty()) readable.push_back(dir);
  load_base(args, plan, readable);
  for (const auto& f : args.options.captured) readable.push_back(f.path);  // --captured files
  const std::string sandbox =
      args.in_worker()
          ? enter_worker_sandbox(
                readable, args.out_dir,
                args.options.worker.device_share.empty()
                    ? std::string()
                    : fs::path(args.options.worker.device_share).parent_path().string())
      : args.isolate ? std::string()
                     : "none: --no-isolate runs kernels and references in kgate's own process";
  kgate::check_runner_environment();  // KGATE_JUDGE: said once, before any worker starts
  if (!args.in_worker() && !args.isolate) {
    const char* require = std::getenv("KGATE_REQUIRE_SANDBOX");
    if (require && std::string(require) == "1")
      throw_usage(
          "--no-isolate runs kernels and references outside the worker sandbox, and "
          "--require-sandbox "
          "is set: drop one of them");
  }
  if (!args.baseline_package.empty() && args.request.packages.empty())
    throw_usage(
        "--baseline-package compares packages: name the new package too (kgate check NEW_PKG "
        "--baseline-package " +
        args.baseline_package + ")");
  kgate::plan::refuse_packages_on_cpu(args.request);
  // Checked before anything runs, so that a bad file costs no kernel time. Workers leave them to
  // the parent, which writes the final report.
  std::vector<GoogleBenchmarkOutput> google_benchmark;
  if (!args.in_worker())
    for (const auto& path : args.benchmark_json)
      google_benchmark.push_back(read_google_benchmark_json(path));
  kgate::plan::DeviceProbe device([](std::string* why) { return cuda::device_available(why); });
  if (args.cost) cost::enable({});  // (compiling the packages counts: no device work yet)
  if (const auto exit_code = load_run_packages(args, plan, device)) return *exit_code;
  if (const auto exit_code = choose_backend(args, plan, device)) return *exit_code;
  // The phases' ends wait for the GPU where this process runs kernels on it (a worker, or
  // --no-isolate); a parent of workers starts no CUDA context.
  if (args.cost && plan.backend == Backend::cuda && (args.in_worker() || !args.isolate))
    cost::enable([] { cuda::synchronize_quietly(); });
  select_run_kernels(args, plan);
  pair_with_base(args, plan);
  check_captured_files(args, plan);
  keep_share(args, plan);
  const bool isolate = args.isolate && !args.in_worker();
  if (!args.devices.empty() && !args.in_worker() && !isolate)
    throw_usage("--devices runs one worker process per GPU: leave out --no-isolate");
  if (args.jobs > 1 && !args.in_worker() && !isolate)
    throw_usage("--jobs runs several worker processes at once: leave out --no-isolate");
  if (!args.sanitize.empty() && !args.in_worker()) {
    if (!isolate)
      throw_usage(
          "--sanitize runs cases in workers under compute-sanitizer: leave out --no-isolate");
    if (plan.backend != Backend::cuda)
      throw_usage("--sanitize needs the cuda backend: compute-sanitizer checks GPU kernels");
  }

  fs::create_directories(args.out_dir);
  // Isolated runs start no CUDA context here: the workers do the work.
  std::optional<Runner> runner;
  RunnerEnvironment environment;
  // A worker of --jobs shares its device with the others: its CUDA context starts, and its cases
  // run, beside theirs; its timing waits until it has the device alone. The share lives as long as
  // the process (left, not destroyed: see the end).
  const DeviceShare& share =
      *new DeviceShare(args.in_worker() ? args.options.worker.device_share : std::string());
  if (!isolate) {
    const auto starting = share.shared();
    const cost::Scope context("context");  // the CUDA context and the device's description
    runner.emplace(plan.backend);
    environment = runner->environment();
    if (share.active()) {
      share.join();  // its context is on the device now
      runner->set_siblings([&share] { return share.members(); });
    }
  }
  RunReport report = start_report(args, plan, environment, sandbox);
  report.google_benchmark = std::move(google_benchmark);
  CheckOptions options = args.options;
  options.baseline_is_base = plan.base.has_value();
  if (share.active()) options.device_share = &share;
  // Every speed comparison of the run is Holm-corrected with every other: each must be able to
  // decide at that strictness. A kernel paired with its base is timed against it and against eager;
  // an UNCHANGED one is not timed at all.
  const int64_t run_comparisons =
      options.worker.run_comparisons > 0
          ? options.worker.run_comparisons
          : std::max<int64_t>(1, plan.timed_pairs()) * options.speed_cases;
  options.worker.run_comparisons = run_comparisons;
  if (options.speed) report.meta.config["run_comparisons"] = run_comparisons;
  // A worker notes each case before it runs it: if the kernel crashes or hangs the process, its
  // parent reads which case did it, and goes on after it in a fresh worker.
  std::shared_ptr<int> progress_fd;
  if (args.in_worker()) {
    fs::create_directories(args.out_dir);
    const int fd = ::open((fs::path(args.out_dir) / "progress").c_str(),
                          O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
      progress_fd = std::shared_ptr<int>(new int(fd), [](int* f) {
        ::close(*f);
        delete f;
      });
      options.on_case = [progress_fd](size_t index, size_t total, const Case& c,
                                      const CaseResult* r) {
        const std::string line = progress_line(index, total, c, r);
        if (::write(*progress_fd, line.data(), line.size()) < 0)
          return;  // progress only: never fatal
      };
    }
  }
  if (!args.observed_sizes.empty()) {
    std::vector<FoundSize> sizes;
    for (const auto& s : nlohmann::json::parse(args.observed_sizes))
      sizes.push_back({s.at("size").get<int64_t>(), s.at("origin").get<std::string>(),
                       s.at("detail").get<std::string>()});
    options.observed_sizes = std::move(sizes);
  }
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
  // A worker also writes report.json: its parent reads it.
  const auto writers =
      chosen_writers(report::file_writers(), args.formats, args.in_worker() ? "json" : "");
  auto write_reports = [&] {
    report.meta.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    write_files(writers, report, out);
  };
  if (isolate) run_in_workers({args, plan, t0, run_comparisons, report, write_reports});
  const size_t total = plan.total();
  for (size_t i = 0; i < plan.selected.size() && !isolate; ++i) {
    const KernelInfo& k = *plan.selected[i];
    if (!args.quiet)
      std::fprintf(stderr, "[%zu/%zu] %s (%s, %s)\n", i + 1, total, k.name.c_str(), k.op.c_str(),
                   backend_name(plan.backend));
    report.kernels.push_back(check_kernel(*runner, k, options, plan.base_of_kernel(k)));
    report.kernels.back().base = plan.base_record(k, report.kernels.back(), args.quiet);
    options.worker.growth_left_s = growth_left_after(options, report.kernels.back());
    progress.end_line();
    write_reports();  // after every kernel: a crash later loses nothing already measured
  }
  for (size_t i = 0; i < plan.packages.size() && !isolate; ++i) {
    const auto& p = plan.packages[i];
    const KernelInfo* baseline = plan.package_baseline(p);
    if (!args.quiet)
      std::fprintf(stderr, "[%zu/%zu] package %s %s (%s, %s)%s\n", plan.selected.size() + i + 1,
                   total, p.manifest.name.c_str(), p.manifest.version.c_str(),
                   p.manifest.op.c_str(), p.kernel.source.c_str(),
                   baseline ? (" against baseline " + baseline->name).c_str() : "");
    report.kernels.push_back(
        check_kernel(*runner, p.kernel, package_options(options, p), baseline));
    report.kernels.back().base = plan.base_record(p.kernel, report.kernels.back(), args.quiet);
    options.worker.growth_left_s = growth_left_after(options, report.kernels.back());
    progress.end_line();
    write_reports();
  }
  if (args.in_worker()) {
    // What follows (the runner's memory given back, the CUDA context torn down at exit) is device
    // work too: it shares the device, so that no other worker's timing runs beside it. The hold is
    // never released: its locks go with the process, after the context.
    share.share_until_exit();
    const int exit_code = static_cast<int>(report.exit_code(args.inconclusive_fails));
    // Its report is written: LibTorch's and CUDA's teardown (0.15 s a worker on an H100) is left
    // to the process's end, which frees the context as well. Not on a shared device (--jobs: the
    // teardown is device work, done under the hold) nor under compute-sanitizer (which reports
    // what it found as the context is torn down).
    if (!share.active() && !std::getenv("KGATE_UNDER_SANITIZER")) {
      std::fflush(nullptr);
      ::_exit(exit_code);
    }
    return exit_code;  // the parent judges
  }
  report.meta.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (args.cost) print_cost(report);
  return conclude(report, args.out_dir, args.inconclusive_fails, writers);
}

}  // namespace kgate::cli
