// kgate: regression tester for optimized GPU kernels. Argument parsing (CLI11) and the mapping of
// errors to exit codes. Each verb adds its own subcommand and options (commands.hpp lists them).
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cli/calibrate.hpp"  // kgate calibrate (A/A runs of the speed gate)
#include "cli/commands.hpp"   // list, check, merge, replay, validate, pack, compare
#include "cli/main.hpp"
#include "cli/output.hpp"
#include "cli/sweep.hpp"   // kgate sweep (tolerance sensitivity)
#include "cli/worker.hpp"  // a worker started ahead
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/safe_text.hpp"
#include "gates/correctness/rules.hpp"
#include "references/catalogue.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/torch_op.hpp"

namespace {

int exit_for(const kgate::Error& e) {
  switch (e.kind()) {
    case kgate::ErrorKind::usage:
    case kgate::ErrorKind::package:
      return static_cast<int>(kgate::ExitCode::usage);
    case kgate::ErrorKind::device:
      return static_cast<int>(kgate::ExitCode::usage);
    case kgate::ErrorKind::internal:
      return static_cast<int>(kgate::ExitCode::internal);
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
  // A worker started ahead (cli/worker.hpp): its libraries are loaded; it waits for its work.
  if (argc == 2 && std::strcmp(argv[1], kgate::cli::kStandbyArgument) == 0) {
    if (isatty(0)) {  // typed by hand: nothing would ever send it work
      std::fprintf(stderr,
                   "kgate: error: %s is kgate check's own (a worker that waits for its arguments "
                   "from its parent on stdin); run kgate check instead\n",
                   kgate::cli::kStandbyArgument);
      return static_cast<int>(kgate::ExitCode::usage);
    }
    std::vector<std::string> args;
    try {
      args = kgate::cli::wait_for_work(argv[0]);
    } catch (const kgate::Error& e) {
      std::fprintf(stderr, "kgate: error: %s\n", e.what());
      return static_cast<int>(kgate::ExitCode::usage);
    }
    if (args.empty()) return 0;  // ended without work
    std::vector<char*> work;
    for (auto& a : args) work.push_back(a.data());
    work.push_back(nullptr);
    return kgate::cli::main(static_cast<int>(args.size()), work.data());
  }
  CLI::App app{
      "kgate " KGATE_VERSION
      " - regression tester for optimized GPU kernels.\n"
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
                 "The GPU to run on: its CUDA ordinal as this process sees it (after "
                 "CUDA_VISIBLE_DEVICES); "
                 "worker processes inherit it (default 0, or the GPU CTest assigned the test)")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber);
  std::vector<std::string> ops_paths, torch_libraries, torch_ops;
  app.add_option(
         "--ops", ops_paths,
         "Op file (kgate-op/1) or directory of them: ops of your own, with TorchScript references "
         "(repeatable; also KGATE_OPS=DIR:DIR)")
      ->type_name("PATH")
      ->allow_extra_args(false);
  app.add_option("--torch-library", torch_libraries,
                 "Shared library of PyTorch custom ops (TORCH_LIBRARY) to load (repeatable)")
      ->type_name("PATH")
      ->allow_extra_args(false);
  app.add_option(
         "--torch-op", torch_ops,
         "A custom op as a kernel: [cuda/|cpu/]NS::OP[.OVERLOAD]=KGATE_OP[,SCHEMA_ARG=NAME...] "
         "(repeatable; its library given with --torch-library)")
      ->type_name("SPEC")
      ->allow_extra_args(false);
  app.add_flag(
      "--require-sandbox", require_sandbox,
      "Refuse to compile a package where no compile sandbox (mount namespace or Landlock) can "
      "be entered (also KGATE_REQUIRE_SANDBOX=1)");
  app.add_option("--compile-timeout", compile_timeout,
                 "Seconds a package compile may take before it is stopped (default 300; also "
                 "KGATE_COMPILE_TIMEOUT)")
      ->check(kgate::cli::above_zero());

  // The verbs, each with its options in its own file: its parser, and what runs it once parsed.
  kgate::cli::ListArgs list_args;
  kgate::cli::CheckArgs check_args;
  kgate::cli::MergeArgs merge_args;
  kgate::cli::ReplayArgs replay_args;
  kgate::cli::ValidateArgs validate_args;
  kgate::cli::PackArgs pack_args;
  kgate::cli::CompareArgs compare_args;
  kgate::cli::CalibrateArgs calibrate_args;
  kgate::cli::SweepArgs sweep_args;
  // Torch ops: registered once the op files they may refer to are loaded (for check, after the
  // config file's, which may name more libraries and ops).
  auto register_torch_ops = [&](std::vector<std::string> libraries,
                                std::vector<std::string> specs) {
    libraries.insert(libraries.end(), torch_libraries.begin(), torch_libraries.end());
    specs.insert(specs.end(), torch_ops.begin(), torch_ops.end());
    if (!libraries.empty() && specs.empty())
      throw kgate::Error(kgate::ErrorKind::usage,
                         "--torch-library needs --torch-op SPEC: name the ops to check");
    kgate::add_torch_ops(libraries, specs);
  };
  // What check, calibrate and sweep record of their command line, and start workers with.
  const auto record_command_line = [&](auto& args) {
    args.command_line = joined(argc, argv);
    args.argv.assign(argv + 1, argv + argc);
  };
  CLI::App* check = nullptr;
  CLI::App* sweep = nullptr;
  struct Verb {
    CLI::App* command;
    std::function<int()> run;
  };
  CLI::App* list = nullptr;
  const std::vector<Verb> verbs = {
      {list = kgate::cli::add_list_command(app, list_args),
       [&] {
         // --torch-op kernels are listed (and their cases) too, with --config's: a dry binding.
         kgate::Config config;
         if (!list_args.config_path.empty())
           config = kgate::load_config(list_args.config_path, kgate::correctness::rule_names());
         for (const auto& p : config.op_files) kgate::add_ops_path(p);
         register_torch_ops(config.torch_libraries, config.torch_ops);
         return kgate::cli::run_list(list_args);
       }},
      {check = kgate::cli::add_check_command(app, check_args),
       [&] {
         kgate::cli::resolve_check_args(*check, check_args);
         register_torch_ops(check_args.options.config.torch_libraries,
                            check_args.options.config.torch_ops);
         record_command_line(check_args);
         return kgate::cli::run_check(check_args);
       }},
      {kgate::cli::add_merge_command(app, merge_args),
       [&] { return kgate::cli::run_merge(merge_args); }},
      {kgate::cli::add_replay_command(app, replay_args),
       [&] { return kgate::cli::run_replay(replay_args); }},
      {kgate::cli::add_validate_command(app, validate_args),
       [&] { return kgate::cli::run_validate(validate_args); }},
      {kgate::cli::add_pack_command(app, pack_args),
       [&] { return kgate::cli::run_pack(pack_args); }},
      {kgate::cli::add_compare_command(app, compare_args),
       [&] { return kgate::cli::run_compare(compare_args); }},
      {kgate::cli::add_calibrate_command(app, calibrate_args),
       [&] {
         record_command_line(calibrate_args);
         return kgate::cli::run_calibrate(calibrate_args);
       }},
      {sweep = kgate::cli::add_sweep_command(app, sweep_args),
       [&] {
         // As for check: settings given on the command line win over the config file.
         if (sweep->count("--cases")) sweep_args.options.cli.cases = sweep_args.options.cases;
         if (sweep->count("--family"))
           sweep_args.options.cli.families = sweep_args.options.families;
         record_command_line(sweep_args);
         return kgate::cli::run_sweep(sweep_args);
       }},
  };

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
  if (!check_args.devices_text.empty() &&
      !check_args.in_worker()) {  // a worker gets its one --device
    try {
      if (device >= 0)
        throw kgate::Error(kgate::ErrorKind::usage, "--device and --devices: give one of them");
      check_args.devices =
          kgate::cli::parse_devices(check_args.devices_text, kgate::cuda::device_count(),
                                    std::getenv("CUDA_VISIBLE_DEVICES"));
    } catch (const kgate::Error& e) {
      std::fprintf(stderr, "kgate: error: %s\n", e.what());
      return static_cast<int>(kgate::ExitCode::usage);
    }
    if (check_args.request.backend.empty())
      check_args.request.backend = "cuda";  // GPUs were asked for: no cpu fallback
  }
  if (device >= 0) {  // before anything starts CUDA
    try {
      kgate::cuda::select_device(device);
    } catch (const kgate::Error& e) {
      std::fprintf(stderr, "kgate: error: %s\n", e.what());
      return static_cast<int>(kgate::ExitCode::usage);
    }
    // A GPU was asked for: no quiet fallback to the cpu backend when it is not there (exit 4).
    for (std::string* backend : {&check_args.request.backend, &sweep_args.request.backend,
                                 &calibrate_args.request.backend})
      if (backend->empty()) *backend = "cuda";
  }
  if (compile_timeout > 0)
    ::setenv("KGATE_COMPILE_TIMEOUT", std::to_string(compile_timeout).c_str(), 1);

  try {
    for (const auto& p : ops_paths) kgate::add_ops_path(p);
    if (!*check && !*list) register_torch_ops({}, {});
    for (const auto& verb : verbs)
      if (*verb.command) return verb.run();
  } catch (const kgate::Error& e) {
    std::fprintf(stderr, "kgate: error: %s\n", kgate::safe_log_text(e.what()).c_str());
    return exit_for(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kgate: internal error: %s\n", kgate::safe_log_text(e.what()).c_str());
    return static_cast<int>(kgate::ExitCode::internal);
  }
  return static_cast<int>(kgate::ExitCode::usage);
}
