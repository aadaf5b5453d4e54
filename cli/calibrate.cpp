// `kgate calibrate`: A/A comparisons through Runner::time_case (the kernel as its own baseline,
// each arm with its own output buffers), summarized with gates/speed/calibration.
#include "cli/calibrate.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/report_files.hpp"
#include "cli/worker.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/rng.hpp"
#include "core/safe_text.hpp"
#include "gates/speed/calibration.hpp"
#include "references/catalogue.hpp"
#include "report/calibration.hpp"
#include "report/writers.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/pipeline.hpp"

namespace kgate::cli {
namespace fs = std::filesystem;

namespace {

SampleNoise sample_noise(const SpeedComparison& cmp, int launches_per_arm) {
  SampleNoise noise;
  const size_t per_block = 2 * static_cast<size_t>(launches_per_arm);
  const auto& a = cmp.baseline_ns;
  const auto& b = cmp.candidate_ns;
  if (a.empty() || a.size() != b.size() || a.size() % per_block != 0) return noise;
  std::vector<double> cvs;
  for (size_t start = 0; start < a.size(); start += per_block) {
    for (const auto* arm : {&a, &b}) {
      const auto first = arm->begin() + static_cast<std::ptrdiff_t>(start);
      cvs.push_back(speed::coefficient_of_variation(
          std::vector<double>(first, first + static_cast<std::ptrdiff_t>(per_block))));
    }
  }
  noise.cv = speed::percentile(cvs, 0.5);
  const auto d = speed::block_log_ratios(a, b, per_block);
  if (d.size() >= 2) {
    double mean = 0, squares = 0;
    for (double x : d) mean += x;
    mean /= static_cast<double>(d.size());
    for (double x : d) squares += (x - mean) * (x - mean);
    noise.block_sd = std::sqrt(squares / static_cast<double>(d.size() - 1));
  }
  return noise;
}

/// A run with every number exact, Inf and NaN as strings (an unbounded confidence bound is +Inf,
/// which calibrate.json writes as null): a worker's runs, read back by its parent (run_from_json).
nlohmann::ordered_json run_exact_json(const AaRun& run) {
  const auto exact = [](double v) -> nlohmann::ordered_json {
    if (std::isfinite(v)) return v;
    return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
  };
  const SpeedComparison& c = run.comparison;
  return {{"decision", outcome_name(c.decision)},
          {"ratio", exact(c.ratio)},
          {"ratio_lower", exact(c.ratio_lower)},
          {"ratio_upper", exact(c.ratio_upper)},
          {"p_value", exact(c.p_value)},
          {"blocks", c.blocks},
          {"dropped_blocks", c.dropped_blocks},
          {"baseline_median_ns", exact(c.baseline_median_ns)},
          {"candidate_median_ns", exact(c.candidate_median_ns)},
          {"launch_cv", exact(run.noise.cv)},
          {"block_sd", exact(run.noise.block_sd)},
          {"seconds", run.seconds},
          {"check_seconds", exact(c.check_seconds)},
          {"checked_launches", run.checked_launches},
          {"checks_judged", c.checks_judged},
          {"timer", c.timer},
          {"note", c.note}};
}

/// The inverse of run_exact_json: every figure calibrate.json and the table use.
AaRun run_from_json(const nlohmann::json& j) {
  const auto num = [&](const char* key) {
    const auto it = j.find(key);
    if (it != j.end() && it->is_number()) return it->get<double>();
    if (it != j.end() && it->is_string()) {
      const auto t = it->get<std::string>();
      if (t == "inf") return std::numeric_limits<double>::infinity();
      if (t == "-inf") return -std::numeric_limits<double>::infinity();
    }
    return std::numeric_limits<double>::quiet_NaN();
  };
  AaRun r;
  SpeedComparison& c = r.comparison;
  c.decision = parse_outcome(j.value("decision", std::string("invalid")));
  c.ratio = num("ratio");
  c.ratio_lower = num("ratio_lower");
  c.ratio_upper = num("ratio_upper");
  c.p_value = num("p_value");
  c.blocks = j.value("blocks", int64_t{0});
  c.dropped_blocks = j.value("dropped_blocks", int64_t{0});
  c.baseline_median_ns = num("baseline_median_ns");
  c.candidate_median_ns = num("candidate_median_ns");
  c.check_seconds = num("check_seconds");
  c.checks_judged = j.value("checks_judged", int64_t{0});
  c.timer = j.value("timer", std::string());
  c.note = j.value("note", std::string());
  r.noise.cv = num("launch_cv");
  r.noise.block_sd = num("block_sd");
  r.checked_launches = j.value("checked_launches", int64_t{0});
  r.seconds = j.value("seconds", 0.0);
  return r;
}

}  // namespace

CLI::App* add_calibrate_command(CLI::App& app, CalibrateArgs& args) {
  auto* cmd = app.add_subcommand(
      "calibrate",
      "A/A runs (each kernel against itself): the speed gate's false-positive rate, noise floor "
      "and "
      "smallest supported delta; writes calibrate.json (exit 3: a case had no valid comparison)");
  auto& timing = args.timing.interleave;
  cmd->add_option("--kernel", args.request.kernels,
                  "Kernel to calibrate (repeatable; default: all but mutants)");
  cmd->add_option("--backend", args.request.backend,
                  "cuda or cpu (default: cuda when a GPU is present)")
      ->check(CLI::IsMember({"cuda", "cpu"}));
  cmd->add_option("--comparisons", args.comparisons, "A/A comparisons per speed case")
      ->capture_default_str()
      ->check(above_zero());
  cmd->add_option("--seed", args.seed, "Master seed")->capture_default_str();
  cmd->add_option("--speed-cases", args.speed_cases, "Shapes timed per kernel")
      ->capture_default_str()
      ->check(above_zero());
  cmd->add_option("--delta", timing.delta, "Minimum slowdown that counts as a regression")
      ->capture_default_str()
      ->check(delta_value());
  cmd->add_option("--alpha", timing.alpha, "False-positive rate per comparison")
      ->capture_default_str()
      ->check(alpha_value());
  cmd->add_option("--time-budget", timing.time_budget_s, "Seconds of timing per comparison")
      ->capture_default_str()
      ->check(time_budget_value());
  cmd->add_flag(
      "--fill-budget", timing.fill_budget,
      "After the first look, let each stage grow (to 16x) to spend the time budget (as kgate "
      "check --fill-budget)");
  cmd->add_flag_callback(
      "--warm", [&args] { args.timing.flush_l2 = false; },
      "Time with a warm L2 (default: flushed between launches)");
  cmd->add_flag(
      "--unchecked-timing", args.unchecked_timing,
      "Time as kgate did before checked timing (one buffer set, no checked launches), to measure "
      "what checking costs; kgate check always checks");
  cmd->add_option("--out", args.out_dir, "Directory for calibrate.json")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->capture_default_str();
  add_format_option(*cmd, args.formats, format_names(report::calibrate_writers()));
  cmd->add_option(
      "--no-device-exit-code", args.request.no_device_exit_code,
      "Exit with this code (e.g. 77 = SKIPPED for CTest) when --backend cuda finds no GPU");
  cmd->add_flag("-q,--quiet", args.quiet, "No progress lines");
  cmd->add_flag_callback(
      "--no-isolate", [&args] { args.isolate = false; },
      "Calibrate in this process instead of one worker process per kernel");
  cmd->add_option("--kernel-timeout", args.kernel_timeout_s,
                  "Seconds before a kernel's worker counts as hung and is killed")
      ->capture_default_str()
      ->check(timeout_value());
  cmd->add_option("--only", args.request.only, "")->group("");  // internal: the worker's kernel
  cmd->add_flag("--in-worker", args.in_worker, "")->group("");
  return cmd;
}

int run_calibrate(const CalibrateArgs& args) {
  const auto t0 = std::chrono::steady_clock::now();
  plan::DeviceProbe device([](std::string* why) { return cuda::device_available(why); });
  const plan::BackendChoice choice = plan::choose_backend(args.request, device);
  if (const auto exit_code = announce(choice)) return *exit_code;
  const Backend backend = choice.backend;

  std::vector<const KernelInfo*> selected = plan::select_kernels(args.request.kernels, backend);
  if (selected.empty())
    throw_usage(std::string("no kernels to calibrate on the ") + backend_name(backend) +
                " backend");

  if (!args.request.only.empty()) {  // a worker: its one kernel
    selected.erase(
        std::remove_if(selected.begin(), selected.end(),
                       [&](const KernelInfo* k) { return k->name != args.request.only; }),
        selected.end());
    if (selected.size() != 1)
      throw_usage("--only " + args.request.only + ": no such kernel in this calibration");
  }

  fs::create_directories(args.out_dir);
  const fs::path out = fs::path(args.out_dir) / "calibrate.json";
  const bool isolate = args.isolate && !args.in_worker;
  // Isolated runs start no CUDA context here: the workers do the work.
  std::optional<Runner> runner;
  RunnerEnvironment env;
  if (!isolate) {
    runner.emplace(backend);
    env = runner->environment();
  }
  const auto& il = args.timing.interleave;
  const Progress say(args.quiet);

  const auto make_meta = [&] {
    nlohmann::ordered_json meta = run_meta(args.command_line, backend, env, args.seed);
    meta["config"] = {{"comparisons", args.comparisons},
                      {"speed_cases", args.speed_cases},
                      {"delta", il.delta},
                      {"alpha", il.alpha},
                      {"time_budget_s", il.time_budget_s},
                      {"launches_per_arm", il.launches_per_arm},
                      {"blocks_per_stage", il.blocks_per_stage},
                      {"max_stages", il.max_stages},
                      {"fill_budget", il.fill_budget},
                      {"flush_l2", args.timing.flush_l2},
                      {"checked_timing", !args.unchecked_timing},
                      {"isolate", isolate || args.in_worker}};
    return meta;
  };
  CalibrationReport calibration;
  calibration.meta = make_meta();
  const auto writers = chosen_writers(report::calibrate_writers(), args.formats);
  const auto write_reports = [&] { write_files(writers, calibration, args.out_dir); };

  // One kernel's A/A runs in this process; `partial` is called after every case.
  const auto calibrate_kernel = [&](const KernelInfo& kernel, CalibratedKernel& k,
                                    const std::function<void()>& partial) {
    const auto cases = speed_cases(find_op(kernel.op), kernel, args.seed, args.speed_cases);
    for (const Case& c : cases) {
      CaseRuns cr{c, {}};
      for (int i = 0; i < args.comparisons; ++i) {
        if (runner->context_lost()) {
          throw Error(ErrorKind::device, "the CUDA context was lost while calibrating '" +
                                             kernel.name +
                                             "': calibration stopped (see calibrate.json)");
        }
        const auto start = std::chrono::steady_clock::now();
        const uint64_t seed = derive_seed(args.seed, "calibrate/" + kernel.name + "/" + c.id(),
                                          static_cast<uint64_t>(i));
        AaRun run;
        const auto rule = rule_for(find_op(kernel.op), c.dtype, CheckOptions{}, kernel.name);
        TimingOptions timing = args.timing;
        if (args.unchecked_timing) timing.pools = 1;
        run.comparison = runner->time_case(kernel, &kernel, c, timing, seed,
                                           args.unchecked_timing ? nullptr : &rule);
        run.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        run.noise = sample_noise(run.comparison, il.launches_per_arm);
        run.checked_launches = static_cast<int64_t>(run.comparison.checked_launches.size());
        const auto& cmp = run.comparison;
        char line[256];
        std::snprintf(line, sizeof line,
                      "%s %s: A/A %d/%d %s x%.4f [%.4f, %.4f] %lld blocks %.2f s",
                      kernel.name.c_str(), short_case(c).c_str(), i + 1, args.comparisons,
                      outcome_name(cmp.decision), cmp.ratio, cmp.ratio_lower, cmp.ratio_upper,
                      static_cast<long long>(cmp.blocks), run.seconds);
        say(line);
        cr.runs.push_back(std::move(run));
      }
      say.end_line();
      k.cases.push_back(std::move(cr));
      partial();  // an interrupted calibration keeps what it measured
    }
  };
  const auto kernel_of = [&](const KernelInfo& kernel) {
    CalibratedKernel k;
    k.name = kernel.name;
    k.op = kernel.op;
    k.backend = backend_name(kernel.backend);
    return k;
  };

  if (args.in_worker) {
    CalibratedKernel k = kernel_of(*selected.front());
    const auto write = [&] {
      nlohmann::ordered_json exact = nlohmann::ordered_json::array();
      for (const auto& cr : k.cases) {
        nlohmann::ordered_json rs = nlohmann::ordered_json::array();
        for (const auto& r : cr.runs) rs.push_back(run_exact_json(r));
        exact.push_back({{"case", cr.kcase.id()}, {"runs", rs}});
      }
      const nlohmann::ordered_json w = {{"kernel", calibrated_kernel_json(k)},
                                        {"runs", exact},
                                        {"environment",
                                         {{"device", env.device},
                                          {"driver", env.driver},
                                          {"cuda", env.cuda},
                                          {"torch", env.torch}}}};
      write_file_atomically(fs::path(args.out_dir) / "kernel.json", w.dump(2) + "\n");
    };
    calibrate_kernel(*selected.front(), k, write);
    write();
    return 0;
  }

  bool some_case_empty = false;
  for (size_t ki = 0; ki < selected.size(); ++ki) {
    const KernelInfo& kernel = *selected[ki];
    if (!args.quiet)
      std::fprintf(stderr, "[%zu/%zu] %s: %lld speed case(s) x %d A/A comparisons%s\n", ki + 1,
                   selected.size(), kernel.name.c_str(), static_cast<long long>(args.speed_cases),
                   args.comparisons, isolate ? ", in a worker process" : "");
    calibration.kernels.push_back(kernel_of(kernel));
    CalibratedKernel& k = calibration.kernels.back();
    if (isolate) {
      // The kernel in a worker: a fault, crash or hang loses its own rows only (and not the cases
      // it finished: the worker rewrites kernel.json after each).
      const fs::path worker_out = fs::path(args.out_dir) / "workers" / kernel.name;
      std::error_code ignored;
      fs::remove(worker_out / "kernel.json", ignored);
      const auto child = plan::WorkerInvocation::of_target(args.request, backend, args.argv,
                                                           kernel.name, worker_out.string());
      const auto w = run_worker(child, "", args.kernel_timeout_s);
      const std::string said = w.output.empty() ? std::string() : safe_log_text(w.output.text());
      if (!said.empty()) std::fputs((said + (said.back() == '\n' ? "" : "\n")).c_str(), stderr);
      std::string failure = w.failure;
      if (failure.empty() && w.exit_code != 0) {
        // Its last line says why (a lost CUDA context, a usage error).
        std::string last;
        for (size_t end = said.size(); end > 0 && last.empty();) {
          const size_t start = said.rfind('\n', end - 1);
          const size_t from = start == std::string::npos ? 0 : start + 1;
          last = said.substr(from, end - from);
          while (!last.empty() && (last.back() == '\n' || last.back() == ' ')) last.pop_back();
          end = start == std::string::npos ? 0 : start;
        }
        failure = "the worker exited with code " + std::to_string(w.exit_code) +
                  (last.empty() ? "" : ": " + last);
      }
      try {
        std::ifstream in(worker_out / "kernel.json");
        if (in) {
          const auto j = nlohmann::json::parse(in);
          if (env.device.empty()) {
            const auto& e = j.at("environment");
            env.device = e.value("device", "");
            env.driver = e.value("driver", "");
            env.cuda = e.value("cuda", "");
            env.torch = e.value("torch", "");
            const auto seconds = calibration.meta.value("seconds", 0.0);
            calibration.meta = make_meta();
            calibration.meta["seconds"] = seconds;
          }
          std::vector<CaseRuns> cases;
          for (const auto& cj : j.at("runs")) {
            CaseRuns cr{Case::from_id(cj.at("case").get<std::string>()), {}};
            for (const auto& rj : cj.at("runs")) cr.runs.push_back(run_from_json(rj));
            cases.push_back(std::move(cr));
          }
          k.cases = std::move(cases);
        }
      } catch (const std::exception& e) {
        if (failure.empty())
          failure = std::string("the worker's kernel.json is unreadable: ") + e.what();
      }
      if (!failure.empty()) {
        const std::string message = "kernel '" + kernel.name + "': " + failure + " (" +
                                    std::to_string(k.cases.size()) +
                                    " speed case(s) finished before it are kept)";
        std::fprintf(stderr, "kgate: %s\n", message.c_str());
        k.error = message;
        some_case_empty = true;
      }
    } else {
      calibrate_kernel(kernel, k, write_reports);
    }
    for (const auto& cr : k.cases) {
      std::vector<const AaRun*> runs;
      for (const auto& r : cr.runs) runs.push_back(&r);
      some_case_empty |= summarize_runs(runs).valid == 0;
    }
    k.summarized = true;
    calibration.meta["seconds"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    write_reports();
  }

  report::calibrate_console_writer().write(std::cout, calibration);
  std::cout.flush();
  std::printf("\nreport: %s\n", out.string().c_str());
  return some_case_empty ? static_cast<int>(ExitCode::inconclusive) : 0;
}

}  // namespace kgate::cli
