// `kgate sweep`: each case through Runner::check_case with the sweep's rtols, summarized per
// kernel and dtype by gates/sensitivity.
#include "cli/sweep.hpp"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/report_files.hpp"
#include "cli/worker.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/report.hpp"
#include "core/safe_text.hpp"
#include "gates/correctness/rules.hpp"
#include "gates/props/generators.hpp"
#include "gates/sensitivity/sweep.hpp"
#include "references/catalogue.hpp"
#include "report/sweep.hpp"
#include "report/writers.hpp"
#include "runtime/cuda/device.hpp"

namespace kgate::cli {
namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

/// One kernel or package to sweep, with its extra cases (a package's guard boundaries).
struct Target {
  const KernelInfo* kernel = nullptr;
  CheckOptions options;
};

SweptKernel sweep_kernel(Runner& runner, const Target& t, const SweepArgs& args,
                         const sensitivity::SweepGrid& grid,
                         const std::function<void(const std::string&)>& say,
                         std::map<DType, std::vector<sensitivity::CaseErrors>>* raw = nullptr) {
  const KernelInfo& kernel = *t.kernel;
  const OpSignature& op = find_op(kernel.op);
  const KernelSettings settings = resolve_settings(op, kernel.name, t.options);  // once per kernel
  SweptKernel k{kernel.name,           kernel.op, backend_name(kernel.backend), kernel.source, 0,
                kDefaultFragileMargin, {}};
  k.fragile_margin =
      args.fragile_margin.value_or(settings.gates.fragile_margin.value_or(kDefaultFragileMargin));

  const props::GeneratorOptions& gen = settings.cases;
  auto traits = traits_of(kernel);
  traits.huge = false;  // tolerance sensitivity: the huge case's cost buys nothing here
  auto cases = props::generate_cases(op, traits, gen);
  const auto added = guard_and_extra_cases(kernel, t.options);
  cases.insert(cases.end(), added.begin(), added.end());

  std::map<DType, std::vector<sensitivity::CaseErrors>> per_dtype;
  std::map<DType, SweptDtype> results;
  const size_t step = std::max<size_t>(1, cases.size() / 8);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const auto rule = rule_for(op, c.dtype, settings);
    const CaseResult r = runner.check_case(kernel, c, rule, grid.rtols);
    const bool lost =
        runner.context_lost();  // this case faulted: nothing more runs in this context
    if ((i + 1) % step == 0 || i + 1 == cases.size())
      say(kernel.name + ": " + std::to_string(i + 1) + "/" + std::to_string(cases.size()) +
          " cases");
    if (r.fallback) {
      ++k.fallback;
      continue;
    }
    sensitivity::CaseErrors e;
    e.case_id = c.id();
    e.hard_failure = r.outcome == Outcome::failed && !correctness::chosen_rule(r.rule);
    e.hard_failure_rule = e.hard_failure ? reason_name(r.rule) : "";
    e.margin = r.margin;
    e.max_abs = r.vs_reference.max_abs;
    e.max_rel = r.vs_reference.max_rel;
    e.needed_atol = r.needed_atol;
    per_dtype[c.dtype].push_back(e);

    SweptDtype& d = results[c.dtype];
    if (correctness::failed_as_accurate_as_eager(r)) ++d.as_accurate_as_eager;
    d.sweep.rule = correctness::rule_name(rule.kind);
    d.atol = rule.tolerance.atol;
    d.rtol = rule.tolerance.rtol;
    const double closeness = e.hard_failure ? INFINITY : std::isnan(e.margin) ? INFINITY : e.margin;
    if (closeness > d.worst_margin) {
      d.worst_margin = closeness;
      d.worst_case = c.id();
      d.worst_repro = r.repro;
      d.worst_message = r.message;
    }
    if (lost) break;
  }
  for (auto& [dtype, d] : results) {
    const std::string rule = d.sweep.rule;
    d.sweep = sensitivity::summarize(dtype, per_dtype[dtype], grid, k.fragile_margin);
    d.sweep.rule = rule;
    k.dtypes.push_back(std::move(d));
  }
  if (raw) *raw = std::move(per_dtype);
  return k;
}

// A worker's result: each dtype's judged cases, before the summary (the parent summarizes, so
// the worker's file is small and its meaning simple).
ordered_json raw_json(const SweptKernel& k,
                      const std::map<DType, std::vector<sensitivity::CaseErrors>>& per_dtype) {
  ordered_json dtypes = ordered_json::array();
  for (const auto& d : k.dtypes) {
    ordered_json cases = ordered_json::array();
    for (const auto& e : per_dtype.at(d.sweep.dtype))
      cases.push_back({{"id", e.case_id},
                       {"hard", e.hard_failure},
                       {"hard_rule", e.hard_failure_rule},
                       {"margin", json_number(e.margin)},
                       {"max_abs", json_number(e.max_abs)},
                       {"max_rel", json_number(e.max_rel)},
                       {"needed_atol", e.needed_atol}});
    dtypes.push_back({{"dtype", dtype_name(d.sweep.dtype)},
                      {"rule", d.sweep.rule},
                      {"atol", d.atol},
                      {"rtol", d.rtol},
                      {"worst_case", d.worst_case},
                      {"worst_repro", d.worst_repro},
                      {"worst_message", d.worst_message},
                      {"worst_margin", json_number(d.worst_margin)},
                      {"as_accurate_as_eager", d.as_accurate_as_eager},
                      {"cases", cases}});
  }
  return {{"name", k.name},         {"op", k.op},
          {"backend", k.backend},   {"source", k.source},
          {"fallback", k.fallback}, {"fragile_margin", k.fragile_margin},
          {"dtypes", dtypes}};
}

double raw_number(const nlohmann::json& j, const char* key) {
  const auto& v = j.at(key);
  return v.is_number()                                    ? v.get<double>()
         : v.is_string() && v.get<std::string>() == "inf" ? INFINITY
                                                          : NAN;
}

SweptKernel from_raw(const nlohmann::json& j, const sensitivity::SweepGrid& grid) {
  SweptKernel k{
      j.at("name"),           j.at("op"), j.at("backend"), j.at("source"), j.at("fallback"),
      j.at("fragile_margin"), {}};
  for (const auto& dj : j.at("dtypes")) {
    std::vector<sensitivity::CaseErrors> cases;
    for (const auto& cj : dj.at("cases")) {
      sensitivity::CaseErrors e;
      e.case_id = cj.at("id");
      e.hard_failure = cj.at("hard");
      e.hard_failure_rule = cj.at("hard_rule");
      e.margin = raw_number(cj, "margin");
      e.max_abs = raw_number(cj, "max_abs");
      e.max_rel = raw_number(cj, "max_rel");
      for (const auto& a : cj.at("needed_atol"))
        e.needed_atol.push_back(a.is_number() ? a.get<double>() : INFINITY);
      cases.push_back(std::move(e));
    }
    SweptDtype d;
    const DType dtype = parse_dtype(dj.at("dtype"));
    d.sweep = sensitivity::summarize(dtype, cases, grid, k.fragile_margin);
    d.sweep.rule = dj.at("rule");
    d.atol = dj.at("atol");
    d.rtol = dj.at("rtol");
    d.worst_case = dj.at("worst_case");
    d.worst_repro = dj.at("worst_repro");
    d.worst_message = dj.at("worst_message");
    d.worst_margin = raw_number(dj, "worst_margin");
    d.as_accurate_as_eager = dj.value("as_accurate_as_eager", int64_t{0});
    k.dtypes.push_back(std::move(d));
  }
  return k;
}

// The row of a kernel whose worker left no result (a crash, a hang): FAILED, with the reason.
SweptKernel failed_sweep(const KernelInfo& kernel, const std::string& failure) {
  SweptKernel k{kernel.name,           kernel.op, backend_name(kernel.backend), kernel.source, 0,
                kDefaultFragileMargin, {}};
  SweptDtype d;
  sensitivity::CaseErrors e;
  e.case_id = "-";
  e.hard_failure = true;
  e.hard_failure_rule = "worker";
  d.sweep = sensitivity::summarize(kernel.dtypes.empty() ? DType::f32 : kernel.dtypes.front(), {e},
                                   sensitivity::SweepGrid{}, kDefaultFragileMargin);
  d.sweep.rule = "-";
  d.worst_case = "-";
  d.worst_message = failure;
  d.worst_margin = INFINITY;
  k.dtypes.push_back(std::move(d));
  return k;
}

}  // namespace

CLI::App* add_sweep_command(CLI::App& app, SweepArgs& args) {
  auto* cmd = app.add_subcommand(
      "sweep",
      "Tolerance sensitivity: per kernel and dtype, the error distribution, the pass rate over a "
      "tolerance grid, the tightest passing tolerance and the margin; FRAGILE when a kernel passes "
      "with a margin above the threshold; writes sweep.json, sweep.md and sweep.html (exit 1: a "
      "kernel fails its "
      "tolerance, or is FRAGILE with --fail-on-fragile)");
  auto& opt = args.options;
  cmd->add_option("packages", args.request.packages,
                  "Exported package directories to sweep on the GPU")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--kernel", args.request.kernels,
                  "Kernel to sweep (repeatable; default: all but mutants, unless packages)")
      ->allow_extra_args(false);
  cmd->add_option("--arch", args.request.arch, "NVRTC target for packages (default: the GPU's)");
  cmd->add_option("--backend", args.request.backend,
                  "cuda or cpu (default: cuda when a GPU is present)")
      ->check(CLI::IsMember({"cuda", "cpu"}));
  cmd->add_option("--seed", opt.seed, "Master seed")->capture_default_str();
  cmd->add_option("--cases", opt.cases, "Cases per kernel")
      ->capture_default_str()
      ->check(above_zero());
  add_family_option(
      *cmd, opt.families, props::all_families(),
      "Case families (random, ragged, extreme, special, layout, long); repeatable, or a "
      "comma list: random,ragged");
  cmd->add_option("--rule", opt.rule,
                  "Correctness rule the margin is taken under (default: the op's)")
      ->check(CLI::IsMember(correctness::rule_names()));
  cmd->add_option("--config", args.config_path, "Config file (kgate-config/1)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--atol", opt.atol, "Configured absolute tolerance (overrides the op's default)")
      ->check(tolerance_value());
  cmd->add_option("--rtol", opt.rtol, "Configured relative tolerance (overrides the op's default)")
      ->check(tolerance_value());
  cmd->add_option("--fragile-margin", args.fragile_margin,
                  "Margin above which a passing kernel is FRAGILE (default: the config's "
                  "fragile_margin, else 0.8)")
      ->check(fragile_margin_value());
  cmd->add_flag("--fail-on-fragile", args.fail_on_fragile, "Exit 1 when a kernel is FRAGILE");
  cmd->add_option("--out", args.out_dir, "Directory for sweep.json, sweep.md and sweep.html")
      ->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a worker gets its own
  add_format_option(*cmd, args.formats, format_names(report::sweep_writers()));
  cmd->add_option(
      "--no-device-exit-code", args.request.no_device_exit_code,
      "Exit with this code (e.g. 77 = SKIPPED for CTest) when --backend cuda finds no GPU");
  cmd->add_flag("-q,--quiet", args.quiet, "No progress lines");
  cmd->add_flag_callback(
      "--no-isolate", [&args] { args.isolate = false; },
      "Sweep every kernel in this process (default: one worker process each, under a watchdog)");
  cmd->add_option("--kernel-timeout", args.kernel_timeout_s,
                  "Seconds before a kernel's worker counts as hung")
      ->capture_default_str()
      ->check(timeout_value());
  cmd->add_option("--only", args.request.only, "")->group("");  // internal: the worker's kernel
  cmd->add_flag("--in-worker", args.in_worker, "")->group("");
  return cmd;
}

int run_sweep(SweepArgs& args) {
  const auto t0 = std::chrono::steady_clock::now();
  auto& opt = args.options;
  if (!args.config_path.empty())
    opt.config = load_config(args.config_path, correctness::rule_names());
  for (const auto& p : opt.config.op_files) add_ops_path(p);
  plan::refuse_packages_on_cpu(args.request);
  // A worker confines itself before it starts CUDA or runs anything of a package or an op file.
  if (args.in_worker) {
    const std::string sandbox = enter_worker_sandbox(args.request.packages, args.out_dir);
    if (sandbox.rfind("none", 0) == 0 && !args.quiet)
      std::fprintf(stderr,
                   "kgate: warning: the worker runs unconfined (%s); --require-sandbox makes this "
                   "an error\n",
                   sandbox.c_str() + 6);
  }

  plan::DeviceProbe device([](std::string* why) { return cuda::device_available(why); });
  std::vector<LoadedPackage> packages;
  if (!args.request.packages.empty()) {
    auto loaded =
        load_packages(args.request.packages, args.request.arch, device.present(), args.quiet);
    if (!loaded) return static_cast<int>(ExitCode::usage);
    packages = std::move(*loaded);
  }
  const plan::BackendChoice choice = plan::choose_backend(args.request, device);
  if (const auto exit_code = announce(choice)) return *exit_code;
  const Backend backend = choice.backend;

  std::vector<Target> targets;
  if (!args.request.kernels.empty() || packages.empty())
    for (const KernelInfo* k : plan::select_kernels(args.request.kernels, backend))
      targets.push_back({k, opt});
  for (const auto& p : packages) targets.push_back({&p.kernel, package_options(opt, p)});
  if (targets.empty())
    throw_usage(std::string("no kernels to sweep on the ") + backend_name(backend) + " backend");

  if (!args.request.only.empty()) {
    targets.erase(
        std::remove_if(targets.begin(), targets.end(),
                       [&](const Target& t) { return t.kernel->name != args.request.only; }),
        targets.end());
    if (targets.size() != 1)
      throw_usage("--only " + args.request.only + ": no such kernel or package in this sweep");
  }
  fs::create_directories(args.out_dir);
  const sensitivity::SweepGrid grid;
  const Progress say(args.quiet);
  // A worker sweeps its one kernel and writes the judged cases for its parent.
  if (args.in_worker) {
    Runner runner(backend);
    std::map<DType, std::vector<sensitivity::CaseErrors>> raw;
    const SweptKernel k = sweep_kernel(runner, targets.front(), args, grid, say, &raw);
    say.end_line();
    write_file_atomically(fs::path(args.out_dir) / "raw.json", raw_json(k, raw).dump() + "\n");
    return 0;
  }
  const bool isolate = args.isolate;
  std::optional<Runner> runner;
  RunnerEnvironment env;
  if (!isolate) {
    runner.emplace(backend);
    env = runner->environment();
  }

  SweepReport sweep;
  sweep.meta = run_meta(args.command_line, backend, env, opt.seed);
  sweep.grid = grid;
  std::vector<SweptKernel>& results = sweep.kernels;
  const auto writers = chosen_writers(report::sweep_writers(), args.formats);
  for (size_t i = 0; i < targets.size(); ++i) {
    const KernelInfo& kernel = *targets[i].kernel;
    if (!args.quiet)
      std::fprintf(stderr, "[%zu/%zu] %s (%s)%s\n", i + 1, targets.size(), kernel.name.c_str(),
                   kernel.op.c_str(), isolate ? " in a worker process" : "");
    if (isolate) {
      const fs::path worker_out = fs::path(args.out_dir) / "workers" / kernel.name;
      const auto child = plan::WorkerInvocation::of_target(args.request, backend, args.argv,
                                                           kernel.name, worker_out.string());
      std::error_code ignored;
      fs::remove(worker_out / "raw.json", ignored);
      const auto w = run_worker(child, "", args.kernel_timeout_s);
      const std::string said = w.output.empty() ? std::string() : safe_log_text(w.output.text());
      if (!said.empty()) std::fputs((said + (said.back() == '\n' ? "" : "\n")).c_str(), stderr);
      std::optional<SweptKernel> k;
      std::string failure = w.failure;
      if (w.exit_code == 0 && failure.empty()) {
        try {
          std::ifstream in(worker_out / "raw.json");
          k = from_raw(nlohmann::json::parse(in), grid);
        } catch (const std::exception& e) {
          failure = std::string("the worker's result is unreadable: ") + e.what();
        }
      } else if (failure.empty()) {
        failure = "the worker exited with code " + std::to_string(w.exit_code);
      }
      if (!k) {
        std::fprintf(stderr, "kgate: %s: %s\n", kernel.name.c_str(), failure.c_str());
        k = failed_sweep(kernel, "kernel '" + kernel.name + "': " + failure);
      }
      results.push_back(std::move(*k));
    } else {
      results.push_back(sweep_kernel(*runner, targets[i], args, grid, say));
      say.end_line();
    }
    // Written after every kernel: a later crash loses nothing already measured.
    sweep.meta["seconds"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    write_files(writers, sweep, args.out_dir);
  }

  report::sweep_console_writer().write(std::cout, sweep);
  std::cout.flush();
  int failed = 0, fragile = 0;
  for (const auto& k : results)
    for (const auto& d : k.dtypes) {
      failed += d.sweep.verdict == "FAILED";
      fragile += d.sweep.verdict == "FRAGILE";
    }
  // The three files in words, as the line has always read; any other choice by name.
  const std::string files = format_names(writers) == std::vector<std::string>{"json", "md", "html"}
                                ? "grids in " + args.out_dir +
                                      "/sweep.md, curves in sweep.html, all figures in " +
                                      (fs::path(args.out_dir) / "sweep.json").string()
                                : "written: " + file_list(writers, args.out_dir);
  std::printf("\n%d kernel x dtype row(s) failed their tolerance, %d FRAGILE; %s (%.1f s)\n",
              failed, fragile, files.c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (failed > 0 || (fragile > 0 && args.fail_on_fragile))
    return static_cast<int>(ExitCode::correctness);
  return 0;
}

}  // namespace kgate::cli
