// kgate: regression tester for optimized GPU kernels. Argument parsing (CLI11) and the mapping of
// errors to exit codes; the verbs live in one file each (commands.hpp lists them).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <iostream>

#include "cli/calibrate.hpp"  // kgate calibrate (A/A runs of the speed gate)
#include "cli/sweep.hpp"      // kgate sweep (tolerance sensitivity)
#include "cli/commands.hpp"
#include "cli/main.hpp"
#include "cli/output.hpp"
#include "cli/sanitize.hpp"
#include "core/error.hpp"
#include "core/safe_text.hpp"
#include "gates/correctness/rules.hpp"
#include "references/catalogue.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/kernel.hpp"
#include "runtime/torch_op.hpp"

namespace {

int exit_for(const kgate::Error& e) {
  switch (e.kind()) {
    case kgate::ErrorKind::usage:
    case kgate::ErrorKind::package: return static_cast<int>(kgate::ExitCode::usage);
    case kgate::ErrorKind::device: return static_cast<int>(kgate::ExitCode::usage);
    case kgate::ErrorKind::internal: return static_cast<int>(kgate::ExitCode::internal);
  }
  return static_cast<int>(kgate::ExitCode::internal);
}

std::string joined(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

}  // namespace

int kgate::cli::main(int argc, char** argv) {
  CLI::App app{"kgate " KGATE_VERSION " - regression tester for optimized GPU kernels.\n"
               "Exit codes: 0 pass, 1 correctness failure, 2 speed regression, 3 inconclusive (with\n"
               "--inconclusive-fails), 4 usage/config/package error, 5 internal error."};
  app.require_subcommand(1);
  app.set_version_flag("--version", KGATE_VERSION);
  // Package compiles (every verb that compiles a package); given anywhere on the command line, and
  // passed to kgate's worker processes through the environment.
  app.fallthrough();
  bool require_sandbox = false;
  double compile_timeout = 0;
  int device = -1;
  app.add_option("--device", device,
                 "The GPU to run on: its CUDA ordinal as this process sees it (after CUDA_VISIBLE_DEVICES); "
                 "worker processes inherit it (default 0, or the GPU CTest assigned the test)")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber);
  std::vector<std::string> ops_paths, torch_libraries, torch_ops;
  app.add_option("--ops", ops_paths,
                 "Op file (kgate-op/1) or directory of them: ops of your own, with TorchScript references "
                 "(repeatable; also KGATE_OPS=DIR:DIR)")
      ->type_name("PATH")
      ->allow_extra_args(false);
  app.add_option("--torch-library", torch_libraries,
                 "Shared library of PyTorch custom ops (TORCH_LIBRARY) to load (repeatable)")
      ->type_name("PATH")
      ->allow_extra_args(false);
  app.add_option("--torch-op", torch_ops,
                 "A custom op as a kernel: [cuda/|cpu/]NS::OP[.OVERLOAD]=KGATE_OP[,SCHEMA_ARG=NAME...] "
                 "(repeatable; its library given with --torch-library)")
      ->type_name("SPEC")
      ->allow_extra_args(false);
  app.add_flag("--require-sandbox", require_sandbox,
               "Refuse to compile a package where no compile sandbox (mount namespace or Landlock) can "
               "be entered (also KGATE_REQUIRE_SANDBOX=1)");
  app.add_option("--compile-timeout", compile_timeout,
                 "Seconds a package compile may take before it is stopped (default 300; also "
                 "KGATE_COMPILE_TIMEOUT)")
      ->check(kgate::cli::above_zero());

  kgate::cli::ListArgs list_args;
  auto* list = app.add_subcommand("list", "List the kernels under test (or the op catalogue with --ops)");
  list->add_flag("--ops", list_args.ops, "List the op catalogue, one op per line");
  list->add_flag("--all", list_args.all, "Include the mutants (deliberately broken kernels)");

  kgate::cli::CheckArgs check_args;
  auto& opt = check_args.options;
  auto* check = app.add_subcommand("check", "Check kernels and packages: correctness, then speed against the eager "
                                            "reference (and a baseline package)");
  check->add_option("packages", check_args.packages,
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
  check->add_option("--kernel", check_args.kernels,
                    "Kernel to check (repeatable; default: all but mutants, unless packages are given)")
      ->allow_extra_args(false);
  check->add_option("--baseline-package", check_args.baseline_package,
                    "Previous version of the packages: same cases run on it, timed against it interleaved");
  check->add_option("--arch", check_args.arch, "NVRTC target for packages (default: the GPU's, e.g. sm_90)");
  check->add_option("--backend", check_args.backend, "cuda or cpu (default: cuda when a GPU is present)")
      ->check(CLI::IsMember({"cuda", "cpu"}));
  check->add_option("--seed", opt.seed, "Master seed: every case derives from it")->capture_default_str();
  check->add_option("--cases", opt.cases, "Correctness cases per kernel")->capture_default_str()->check(kgate::cli::above_zero());
  check->add_option("--family", opt.families, "Case families (random, ragged, extreme, special, layout, long, huge)")
      ->allow_extra_args(false);
  check->add_option("--rule", opt.rule, "Correctness rule: " + kgate::correctness::rule_list() +
                    " (default: the op's; conditioned for ops that declare their conditioning, "
                    "else eager_relative for f16 and bf16 outputs)")
      ->check(CLI::IsMember(kgate::correctness::rule_names()));
  std::string config_path;
  check->add_option("--config", config_path, "Config file (kgate-config/1): settings per op and kernel")
      ->check(CLI::ExistingFile);
  check->add_option("--atol", opt.atol, "Absolute tolerance (overrides the op's default)");
  check->add_option("--rtol", opt.rtol, "Relative tolerance (overrides the op's default)");
  std::string devices_text;
  check->add_option("--devices", devices_text,
                    "GPUs to use at once: 'all' or ordinals such as 0,1. Kernels and packages are dealt to one "
                    "worker per GPU, and a GPU never runs two at once; one report, Holm over the whole run")
      ->type_name("all|N,M,...");
  check->add_option_function<std::vector<std::string>>(
           "--captured",
           [&](const std::vector<std::string>& files) {
             for (const auto& f : files) opt.captured.push_back({f, f});
           },
           "Captured inputs (safetensors: one call's input tensors by the op's input names) run as fixed "
           "cases, each reported under its file name; repeatable")
      ->check(CLI::ExistingFile)
      ->allow_extra_args(false);
  check->add_flag_callback("--no-shrink", [&] { opt.shrink = false; }, "Do not shrink failing cases");
  check->add_flag_callback("--no-speed", [&] { opt.speed = false; }, "Skip the speed gate");
  check->add_option("--speed-cases", opt.speed_cases, "Shapes timed per kernel")->capture_default_str();
  check->add_option("--delta", opt.timing.interleave.delta, "Minimum slowdown that counts as a regression")
      ->capture_default_str();
  check->add_option("--alpha", opt.timing.interleave.alpha, "False-positive rate per comparison")->capture_default_str();
  check->add_option("--time-budget", opt.timing.interleave.time_budget_s, "Seconds of timing per comparison")
      ->capture_default_str();
  bool warm = false;
  check->add_flag("--warm", warm, "Time with a warm L2 (default: flushed between launches)");
  check->add_flag_callback("--no-isolate", [&] { check_args.isolate = false; },
                  "Run every kernel in this process (default: one worker process each, under a watchdog)");
  check->add_option("--case-timeout", check_args.case_timeout_s,
                    "Seconds a correctness case may run before it counts as hung: max(this, 20 x the slowest case "
                    "so far), at most max(this, 600)")
      ->capture_default_str()
      ->check(kgate::cli::above_zero());
  check->add_option("--kernel-timeout", check_args.kernel_timeout_s,
                    "Seconds before a kernel's worker counts as hung and is killed")
      ->capture_default_str();
  check->add_option("--sanitize", check_args.sanitize,
                    "Run each kernel's largest case of each family (up to 2^20 elements) again under NVIDIA "
                    "compute-sanitizer with this tool, each in its own worker; a finding fails its case")
      ->check(CLI::IsMember(kgate::cli::sanitizer_tools()));
  check->add_option("--sanitize-cases", check_args.sanitize_cases, "Cases per kernel under --sanitize")
      ->capture_default_str()
      ->check(kgate::cli::above_zero());
  check->add_option("--only", check_args.only, "")->group("");   // internal: the worker's kernel
  check->add_flag("--in-worker", check_args.in_worker, "")->group("");
  check->add_option("--resume-at", check_args.resume_at, "")->group("");  // internal: after a fault
  check->add_flag("--resumed-after-failure", check_args.resumed_after_failure, "")->group("");  // internal
  check->add_option("--reference-copies-at", check_args.reference_copies_at, "")->group("");  // internal
  check->add_option("--run-comparisons", check_args.run_comparisons, "")->group("");  // internal: Holm's m
  check->add_option("--case", check_args.only_case, "")->group("");       // internal: shrinking a fault
  check->add_option("--out", check_args.out_dir, "Directory for report.json, junit.xml and summary.md")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->capture_default_str();
  check->add_option("--benchmark-json", check_args.benchmark_json,
                    "Google Benchmark JSON output (--benchmark_out=F --benchmark_out_format=json) to keep in "
                    "report.json (repeatable; informational, decides nothing)")
      ->type_name("FILE")
      ->allow_extra_args(false);
  check->add_option("--shard", check_args.shard,
                    "Check only shard i of n (i/n): the kernels and packages, sorted by name, dealt round-robin; "
                    "join the shards' reports with kgate merge");
  std::optional<double> check_fragile_margin;
  check->add_option("--fragile-margin", check_fragile_margin,
                    "Worst margin above which a passing kernel gets a FRAGILE warning (default: the config's "
                    "fragile_margin, else 0.8)")
      ->check(CLI::Range(1e-9, 1.0));
  check->add_flag("--inconclusive-fails", check_args.inconclusive_fails, "Exit 3 when a speed decision is inconclusive");
  check->add_option("--no-device-exit-code", check_args.no_device_exit_code,
                    "Exit with this code (e.g. 77 = SKIPPED for CTest) when --backend cuda finds no GPU");
  check->add_flag("-q,--quiet", check_args.quiet, "No progress lines");

  kgate::cli::MergeArgs merge_args;
  auto* merge = app.add_subcommand("merge", "Join the reports of the shards of one run (kgate check --shard i/n) into one, "
                                            "with the multiple-comparison correction over all of them");
  merge->add_option("reports", merge_args.reports, "The shards' report.json files")->required()->check(CLI::ExistingFile);
  merge->add_option("--out", merge_args.out_dir, "Directory for the joined report.json, junit.xml and summary.md")
      ->capture_default_str();
  merge->add_flag("--inconclusive-fails", merge_args.inconclusive_fails, "Exit 3 when a speed decision is inconclusive");

  kgate::cli::ReplayArgs replay_args;
  auto* replay = app.add_subcommand("replay", "Re-run exactly one case (an id or a JSON file) on one kernel");
  auto* replay_kernel = replay->add_option("--kernel", replay_args.kernel, "Kernel to run");
  replay->add_option("--package", replay_args.package_dir, "Package directory to run (instead of --kernel)")
      ->check(CLI::ExistingDirectory)
      ->excludes(replay_kernel);
  replay->add_option("--arch", replay_args.arch, "NVRTC target for --package (default: the GPU's)");
  replay->add_option("case", replay_args.case_ref, "Case id (op:dtype:dims:layout:values:seed) or JSON file")->required();
  replay->add_option("--rule", replay_args.rule, "Correctness rule")->check(CLI::IsMember(kgate::correctness::rule_names()));
  replay->add_option("--atol", replay_args.atol, "Absolute tolerance");
  replay->add_option("--rtol", replay_args.rtol, "Relative tolerance");

  kgate::cli::ValidateArgs validate_args;
  auto* validate = app.add_subcommand("validate", "Validate a kernel package: manifest, paths, NVRTC compile (no GPU needed)");
  validate->add_option("package", validate_args.package_dir, "Package directory (holding kgate.json)")->required();
  validate->add_flag_callback("--no-compile", [&] { validate_args.compile = false; }, "Check the manifest only");
  validate->add_option("--arch", validate_args.arch, "GPU architecture to compile for")->capture_default_str();

  kgate::cli::PackArgs pack_args;
  auto* pack = app.add_subcommand("pack", "Make a source package self-contained: copy it and the include_dirs it "
                                          "reaches outside itself into OUT (hashes in kgate-pack.json), then validate OUT");
  pack->add_option("source", pack_args.source_dir, "Source package directory (holding kgate.json)")->required();
  pack->add_option("out", pack_args.out_dir, "Directory to write the packed package to (new, empty, or an earlier pack)")
      ->required();
  pack->add_flag_callback("--no-compile", [&] { pack_args.compile = false; }, "Validate the manifest only (no NVRTC)");
  pack->add_option("--arch", pack_args.arch, "GPU architecture to compile for")->capture_default_str();
  pack->add_flag("-q,--quiet", pack_args.quiet, "Print only the validation line");

  kgate::cli::CompareArgs compare_args;
  auto* compare = app.add_subcommand("compare", "Compare two kgate reports (old.json new.json)");
  compare->add_option("old", compare_args.old_report, "Earlier report")->required()->check(CLI::ExistingFile);
  compare->add_option("new", compare_args.new_report, "Later report")->required()->check(CLI::ExistingFile);

  // calibrate: options live in cli/calibrate.cpp.
  kgate::cli::CalibrateArgs calibrate_args;
  auto* calibrate = kgate::cli::add_calibrate_command(app, calibrate_args);
  // sweep: options live in cli/sweep.cpp.
  kgate::cli::SweepArgs sweep_args;
  auto* sweep = kgate::cli::add_sweep_command(app, sweep_args);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // "A subcommand is required" for a mistyped verb: name the verbs instead.
    if (dynamic_cast<const CLI::RequiredError*>(&e) && argc > 1 && argv[1][0] != '-') {
      std::string verbs;
      for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; }))
        verbs += (verbs.empty() ? "" : ", ") + sub->get_name();
      std::fprintf(stderr, "kgate: error: unknown verb '%s'; verbs: %s (kgate --help)\n",
                   kgate::safe_log_text(argv[1]).c_str(), verbs.c_str());
      return static_cast<int>(kgate::ExitCode::usage);
    }
    const int rc = app.exit(e);
    return rc == 0 ? 0 : static_cast<int>(kgate::ExitCode::usage);
  }

  if (require_sandbox) ::setenv("KGATE_REQUIRE_SANDBOX", "1", 1);
  if (!devices_text.empty() && !check_args.in_worker) {  // a worker gets its one --device
    try {
      if (device >= 0) throw kgate::Error(kgate::ErrorKind::usage, "--device and --devices: give one of them");
      check_args.devices = kgate::cli::parse_devices(devices_text, kgate::cuda::device_count(),
                                                     std::getenv("CUDA_VISIBLE_DEVICES"));
    } catch (const kgate::Error& e) {
      std::fprintf(stderr, "kgate: error: %s\n", e.what());
      return static_cast<int>(kgate::ExitCode::usage);
    }
    if (check_args.backend.empty()) check_args.backend = "cuda";  // GPUs were asked for: no cpu fallback
  }
  if (device >= 0) {  // before anything starts CUDA
    try {
      kgate::cuda::select_device(device);
    } catch (const kgate::Error& e) {
      std::fprintf(stderr, "kgate: error: %s\n", e.what());
      return static_cast<int>(kgate::ExitCode::usage);
    }
    // A GPU was asked for: no quiet fallback to the cpu backend when it is not there (exit 4).
    for (std::string* backend : {&check_args.backend, &sweep_args.backend, &calibrate_args.backend})
      if (backend->empty()) *backend = "cuda";
  }
  if (compile_timeout > 0) ::setenv("KGATE_COMPILE_TIMEOUT", std::to_string(compile_timeout).c_str(), 1);

  try {
    for (const auto& p : ops_paths) kgate::add_ops_path(p);
    // Torch ops: registered once the op files they may refer to are loaded (for check, after the
    // config file's, which may name more libraries and ops).
    auto register_torch_ops = [&](std::vector<std::string> libraries, std::vector<std::string> specs) {
      libraries.insert(libraries.end(), torch_libraries.begin(), torch_libraries.end());
      specs.insert(specs.end(), torch_ops.begin(), torch_ops.end());
      if (!libraries.empty() && specs.empty())
        throw kgate::Error(kgate::ErrorKind::usage, "--torch-library needs --torch-op SPEC: name the ops to check");
      kgate::add_torch_ops(libraries, specs);
    };
    if (!*check) register_torch_ops({}, {});
    if (*list) return kgate::cli::run_list(list_args);
    if (*check) {
      opt.timing.flush_l2 = !warm;
      // Settings given on the command line win over the config file (global < op < kernel < CLI).
      if (!config_path.empty()) opt.config = kgate::load_config(config_path);
      for (const auto& p : opt.config.op_files) kgate::add_ops_path(p);
      register_torch_ops(opt.config.torch_libraries, opt.config.torch_ops);
      if (check->count("--cases")) opt.cli.cases = opt.cases;
      if (check->count("--family")) opt.cli.families = opt.families;
      if (check->count("--delta")) opt.cli.delta = opt.timing.interleave.delta;
      if (check->count("--alpha")) opt.cli.alpha = opt.timing.interleave.alpha;
      if (check->count("--time-budget")) opt.cli.time_budget_s = opt.timing.interleave.time_budget_s;
      if (check_fragile_margin) opt.cli.fragile_margin = check_fragile_margin;
      check_args.command_line = joined(argc, argv);
      check_args.argv.assign(argv + 1, argv + argc);
      return kgate::cli::run_check(check_args);
    }
    if (*replay) return kgate::cli::run_replay(replay_args);
    if (*validate) return kgate::cli::run_validate(validate_args);
    if (*pack) return kgate::cli::run_pack(pack_args);
    if (*compare) return kgate::cli::run_compare(compare_args);
    if (*merge) return kgate::cli::run_merge(merge_args);
    if (*calibrate) {
      calibrate_args.command_line = joined(argc, argv);
      calibrate_args.argv.assign(argv + 1, argv + argc);
      return kgate::cli::run_calibrate(calibrate_args);
    }
    if (*sweep) {
      // As for check: settings given on the command line win over the config file.
      if (sweep->count("--cases")) sweep_args.options.cli.cases = sweep_args.options.cases;
      if (sweep->count("--family")) sweep_args.options.cli.families = sweep_args.options.families;
      sweep_args.command_line = joined(argc, argv);
      sweep_args.argv.assign(argv + 1, argv + argc);
      return kgate::cli::run_sweep(sweep_args);
    }
  } catch (const kgate::Error& e) {
    std::fprintf(stderr, "kgate: error: %s\n", kgate::safe_log_text(e.what()).c_str());
    return exit_for(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kgate: internal error: %s\n", kgate::safe_log_text(e.what()).c_str());
    return static_cast<int>(kgate::ExitCode::internal);
  }
  return static_cast<int>(kgate::ExitCode::usage);
}
