// kgate validate: a package's manifest checked and its sources compiled, without a GPU.
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>
#include <tuple>

#include "cli/output.hpp"
#include "cli/worker.hpp"
#include "core/config.hpp"
#include "core/cuda_limits.hpp"
#include "core/error.hpp"
#include "runtime/package/device_props.hpp"
#include "runtime/package/pack.hpp"
#include "runtime/package/package_kernel.hpp"
#include "runtime/package/validate.hpp"
#include "runtime/pipeline.hpp"
#include "runtime/runner.hpp"

namespace kgate::cli {
namespace fs = std::filesystem;

CLI::App* add_validate_command(CLI::App& app, ValidateArgs& args) {
  auto* cmd = app.add_subcommand(
      "validate", "Validate a kernel package: manifest, paths, NVRTC compile (no GPU needed)");
  cmd->add_option("package", args.package_dir, "Package directory (holding kgate.json)")
      ->required();
  cmd->add_flag_callback(
      "--no-compile", [&args] { args.compile = false; }, "Check the manifest only");
  cmd->add_option("--arch", args.arch, "GPU architecture to compile for")->capture_default_str();
  cmd->add_option("--cases", args.cases,
                  "Also list the cases `kgate check` would make with this many per kernel (with "
                  "--seed, --family, "
                  "--config as there): id, family, inside the guard or the fallback")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--seed", args.seed, "Master seed of the listed cases (as kgate check's)")
      ->capture_default_str();
  add_family_option(
      *cmd, args.families, check_families(),
      "Case families of the listed cases (as kgate check's; repeatable, or a comma list)");
  cmd->add_option("--config", args.config_path,
                  "Config file (kgate-config/1) of the listed cases (as kgate check's)");
  cmd->add_flag_callback(
      "--no-reference", [&args] { args.reference = false; },
      "Do not run the op's reference on a small case on the CPU (in a sandboxed worker)");
  cmd->add_option(
      "--device-props",
      args.device_props, "Device properties the launches are judged under: a preset (" + [] {
        std::string names;
        for (const auto& n : package::device_preset_names())
          names += (names.empty() ? "" : ", ") + n;
        return names;
      }() + ") or a JSON file; default: every preset of --arch's architecture");
  cmd->add_flag("--reference-worker", args.reference_worker, "")->group("");
  return cmd;
}

namespace {

// In the worker (kgate validate --reference-worker): the op's reference, eager and float64 oracle,
// on the smallest f32 case a check would make, on the CPU, judged as a fallback is (the outputs'
// count and shapes against the op's). One line on stdout; exit 0, or 1 when the reference fails.
int reference_worker(const ValidateArgs& args, const std::string& dir) {
  const fs::path out =
      fs::temp_directory_path() / ("kgate-reference-" + std::to_string(::getpid()));
  const std::string sandbox = enter_worker_sandbox({dir}, out.string());
  const auto p = load_package(dir, args.arch, true);
  if (!p) return static_cast<int>(ExitCode::usage);
  CheckOptions base;
  base.seed = args.seed;
  std::vector<Case> cases = correctness_cases(p->kernel, package_options(base, *p));
  // f32 (CPU kernels of every ATen op take it), contiguous, the fewest elements.
  const auto elements = [](const Case& c) {
    int64_t n = 1;
    for (const auto& [name, v] : c.dims) n *= std::max<int64_t>(v, 1);
    return n;
  };
  const auto rank = [&](const Case& c) {
    return std::make_tuple(c.dtype != DType::f32, c.layout != Layout::contiguous, elements(c));
  };
  if (cases.empty()) {
    std::printf("reference: not run (no case for %s)\n", p->kernel.name.c_str());
    return 0;
  }
  const Case c = *std::min_element(cases.begin(), cases.end(),
                                   [&](const Case& a, const Case& b) { return rank(a) < rank(b); });
  KernelInfo fallback;
  fallback.name = p->kernel.name;
  fallback.op = p->kernel.op;
  fallback.backend = Backend::cpu;
  fallback.dtypes = {c.dtype};
  fallback.source = p->kernel.source;
  fallback.accepts = [](const KernelCall&) {
    return false;
  };  // the reference runs, as outside a guard
  fallback.rejection_reason = [](const KernelCall&) { return std::string("the reference alone"); };
  fallback.launch = [](const KernelCall&) {};
  Runner runner(Backend::cpu);
  const CaseResult r =
      runner.check_case(fallback, c, rule_for(*p->op, c.dtype, base, fallback.name));
  std::error_code ec;
  fs::remove_all(out, ec);
  if (r.outcome == Outcome::invalid || r.rule == Reason::reference_error ||
      r.outcome == Outcome::failed) {
    std::printf("reference: op '%s' fails on %s on the CPU (sandbox: %s): %s\n",
                p->kernel.op.c_str(), c.id().c_str(), sandbox.c_str(), r.message.c_str());
    return 1;
  }
  std::printf("reference: op '%s' ran on %s on the CPU (eager and float64 oracle; sandbox: %s)\n",
              p->kernel.op.c_str(), c.id().c_str(), sandbox.c_str());
  return 0;
}

// The devices a package's launches are judged under: --device-props, else every preset of the
// architecture it is compiled for. Empty: none applies (an architecture without a preset).
std::vector<package::DeviceProps> judged_devices(const ValidateArgs& args) {
  if (!args.device_props.empty()) return {package::load_device_props(args.device_props)};
  std::vector<package::DeviceProps> out;
  const std::string digits = args.arch.rfind("sm_", 0) == 0 ? args.arch.substr(3) : args.arch;
  for (const auto& name : package::device_preset_names()) {
    const auto p = package::device_preset(name);
    if (p && std::to_string(p->arch) == digits) out.push_back(*p);
  }
  return out;
}

// Every case `kgate check` makes inside the guard runs some launch, and each launch fits the
// device: under each judged device (device_props.hpp), a line of the launches and their case
// counts, or the problems (exit 4).
int check_launches(const ValidateArgs& args, const std::string& dir, const LoadedPackage* p) {
  std::vector<package::DeviceProps> devices = judged_devices(args);
  // Launches that read no device property are judged once, under the first device's limits.
  if (!p->manifest.reads_device && devices.size() > 1) devices.resize(1);
  if (devices.empty()) {
    if (p->manifest.reads_device)
      throw_usage(dir + ": the launches read the device's properties and no preset is of " +
                  args.arch +
                  "'s architecture: name the device with --device-props PRESET or a JSON file");
    package::DeviceProps any;  // the launches read none: CUDA's own limits
    any.name = "CUDA's limits";
    any.arch = 90;
    any.threads_per_block = 1024;
    any.smem_per_block_optin = cuda_limits::kSharedPerBlockMax;
    devices.push_back(any);
  }
  CheckOptions base;
  base.seed = args.seed;
  const std::vector<Case> cases = correctness_cases(p->kernel, package_options(base, *p));
  int rc = 0;
  for (const auto& d : devices) {
    if (p->manifest.reads_device) package::set_device_props_override(d);
    std::map<std::string, int64_t> counts;
    std::vector<std::string> problems;
    int64_t inside = 0;
    try {
      for (const auto& c : cases) {
        if (!package::inside_guard(p->manifest, *p->op, c)) continue;
        ++inside;
        for (const auto& problem : package::case_launch_problems(p->manifest, *p->op, c, d))
          problems.push_back(c.id() + ": " + problem);
        for (const auto& l : package::case_launches(p->manifest, *p->op, c)) ++counts[l.field];
      }
    } catch (...) {
      package::set_device_props_override(std::nullopt);
      throw;
    }
    package::set_device_props_override(std::nullopt);
    const std::string on = p->manifest.reads_device ? " on " + package::device_props_summary(d)
                                                    : " (limits of " + d.name + ")";
    if (!problems.empty()) {
      rc = static_cast<int>(ExitCode::usage);
      std::fprintf(stderr, "%s: launches%s: %zu problem(s) among %lld cases inside the guard:\n",
                   dir.c_str(), on.c_str(), problems.size(), static_cast<long long>(inside));
      for (std::size_t i = 0; i < problems.size() && i < 10; ++i)
        std::fprintf(stderr, "  %s\n", problems[i].c_str());
      if (problems.size() > 10) std::fprintf(stderr, "  and %zu more\n", problems.size() - 10);
      continue;
    }
    std::string used;
    for (const auto& [field, n] : counts)
      used += (used.empty() ? "" : ", ") + field + " " + std::to_string(n);
    std::printf("launches%s: every one of %lld cases inside the guard runs a launch (%s)\n",
                on.c_str(), static_cast<long long>(inside), used.empty() ? "none" : used.c_str());
    for (const auto& l : p->manifest.launches)
      if (!counts.count(l.field))
        std::printf(
            "  warning: %s runs on none of these cases: kgate check does not check its "
            "code (give it a case that meets its condition)\n",
            l.field.c_str());
  }
  return rc;
}

// The cases `kgate check` makes for the package: the same options, the same functions.
int list_cases(const ValidateArgs& args, const LoadedPackage* p) {
  const CheckOptions options =
      package_options(listing_options(args.seed, args.cases, args.families, args.config_path), *p);
  const std::vector<Case> cases = correctness_cases(p->kernel, options);
  std::printf("cases of %s (kgate check --seed %llu --cases %lld): %zu correctness, %zu timed\n",
              p->kernel.name.c_str(), static_cast<unsigned long long>(args.seed),
              static_cast<long long>(args.cases), cases.size(), options.timed_cases.size());
  for (const auto& c : cases) {
    const std::string outside = package::case_guard_violation(p->manifest, *p->op, c);
    std::printf("  %s  %s  %s\n", c.id().c_str(), c.family.empty() ? "-" : c.family.c_str(),
                outside.empty() ? "inside the guard"
                                : ("outside the guard, the fallback runs: " + outside).c_str());
  }
  for (const auto& w : options.timed_cases) {
    std::printf("  timed  %s%s\n", w.kcase.id().c_str(),
                w.calls > 0 ? ("  (" + std::to_string(w.calls) + " calls)").c_str() : "");
    // Arguments computed per call ({"scalar": "1 / sqrt(D)"}), as this case passes them.
    for (const auto& s : package::case_float_scalars(p->manifest, *p->op, w.kcase))
      std::printf("    %s\n", s.c_str());
    for (const auto& l : package::case_launches(p->manifest, *p->op, w.kcase))
      std::printf("    %s\n", package::describe(l).c_str());
  }
  return 0;
}

}  // namespace

int run_validate(const ValidateArgs& args) {
  if (args.reference_worker) return reference_worker(args, args.package_dir);
  package::ValidateOptions options = validate_options(args.arch);
  options.compile = args.compile;
  // Messages name the package by its full path: `kgate validate .` would otherwise say "in .".
  std::error_code ec;
  const fs::path absolute = fs::absolute(args.package_dir, ec);
  std::string dir = ec ? args.package_dir : absolute.lexically_normal().string();
  if (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const auto report = package::validate_package(dir, options);
  if (!report.ok()) {
    std::fprintf(stderr, "%s", package::format_problems(report.problems).c_str());
    std::fprintf(stderr, "kgate: %zu problem(s) in %s\n", report.problems.size(), dir.c_str());
    return static_cast<int>(ExitCode::usage);
  }
  std::printf("valid: %s\n", package::format_summary(report).c_str());
  // A packed package edited since: valid, but no longer what its source packs to.
  const auto drift = package::pack_drift(dir);
  if (!drift.empty()) {
    std::string files;
    for (const auto& d : drift) files += (files.empty() ? "" : ", ") + d;
    std::fprintf(stderr,
                 "kgate: note: %s differs from its %s (edited after kgate pack): %s; pack it again "
                 "from its source\n",
                 dir.c_str(), package::kPackRecordFileName, files.c_str());
  }
  // The op's reference on one small case on the CPU, in a sandboxed worker: a reference that
  // throws or returns the wrong shape is found before any GPU run.
  if (args.compile && args.reference) {
    const WorkerResult w = run_worker_process({"validate", dir, "--reference-worker", "--arch",
                                               args.arch, "--seed", std::to_string(args.seed)},
                                              "", 300);
    std::string text = w.output.text();
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (!w.ok || w.exit_code != 0) {
      std::fprintf(
          stderr, "%s\n",
          text.empty() ? ("reference: the worker failed: " + w.failure).c_str() : text.c_str());
      std::fprintf(
          stderr,
          "kgate: the reference of op '%s' fails; fix it in its op file before any GPU run\n",
          report.manifest.op.c_str());
      return static_cast<int>(ExitCode::usage);
    }
    if (!text.empty()) std::printf("%s\n", text.c_str());
  }
  if (!args.compile) {
    if (args.cases > 0)
      throw_usage(
          "--cases lists what `kgate check` would run, which needs the package compiled: drop "
          "--no-compile");
    return 0;
  }
  // The package as check loads it, once, for the launch check and the listed cases.
  const auto p = load_package(dir, args.arch, true);
  if (!p) return static_cast<int>(ExitCode::usage);
  if (const int rc = check_launches(args, dir, &*p); rc != 0) return rc;
  if (args.cases == 0) return 0;
  // The timed cases' launches under the device given (or the first judged).
  std::vector<package::DeviceProps> devices = judged_devices(args);
  if (!devices.empty()) package::set_device_props_override(devices.front());
  const int rc = list_cases(args, &*p);
  package::set_device_props_override(std::nullopt);
  return rc;
}

}  // namespace kgate::cli
