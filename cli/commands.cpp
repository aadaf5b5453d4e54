// The kgate verbs: list, check, replay, validate, compare.
#include "cli/commands.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "references/catalogue.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/package/validate.hpp"

namespace kgate::cli {
namespace fs = std::filesystem;

namespace {

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string fmt(const char* spec, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

std::string git_sha() {
  if (!env("GITHUB_SHA").empty()) return env("GITHUB_SHA");
  FILE* p = popen("git rev-parse HEAD 2>/dev/null", "r");  // fixed command, no user input
  if (!p) return "";
  char buf[64] = {0};
  const bool ok = std::fgets(buf, sizeof buf, p) != nullptr;
  pclose(p);
  std::string s = ok ? buf : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream f(path);
  if (!f) throw_usage("cannot write " + path.string() + ": check that --out is a writable directory");
  f << text;
  if (!f) throw_usage("writing " + path.string() + " failed (disk full?)");
}

std::string speed_cell(const KernelReport& k) {
  if (k.speed.empty()) return "-";
  const SpeedComparison* worst = &k.speed.front();
  for (const auto& s : k.speed)
    if (s.ratio > worst->ratio) worst = &s;
  return "x" + fmt("%.3f", worst->ratio) + " " + outcome_name(worst->decision);
}

void print_table(const RunReport& report) {
  std::printf("\n%-34s %-9s %-6s %-14s %-8s %s\n", "kernel", "op", "backend", "correctness", "margin", "speed vs eager (worst)");
  for (const auto& k : report.kernels) {
    const std::string corr = std::string(outcome_name(k.outcome == Outcome::failed ? Outcome::failed
                                                       : k.outcome == Outcome::skipped ? Outcome::skipped
                                                                                        : Outcome::passed)) +
                             " " + std::to_string(k.correctness.passed) + "/" + std::to_string(k.correctness.cases);
    std::printf("%-34s %-9s %-6s %-14s %-8s %s\n", k.name.c_str(), k.op.c_str(), k.backend.c_str(), corr.c_str(),
                fmt("%.3f", k.correctness.worst_margin).c_str(), speed_cell(k).c_str());
  }
  for (const auto& k : report.kernels) {
    for (const auto& s : k.speed)
      std::printf("  %s %s: x%.3f [%.3f, %.3f] vs %s (%.1f us vs %.1f us, %lld blocks, %s) %s%s\n", k.name.c_str(),
                  s.kcase.id().c_str(), s.ratio, s.ratio_lower, s.ratio_upper, s.baseline.c_str(),
                  s.candidate_median_ns / 1e3, s.baseline_median_ns / 1e3, static_cast<long long>(s.blocks),
                  s.timer.c_str(), outcome_name(s.decision), s.note.empty() ? "" : (" — " + s.note).c_str());
    if (k.correctness.minimal) {
      const auto& m = *k.correctness.minimal;
      std::printf("\nFAILED %s: %s\n  minimal case: %s\n  repro: %s\n", k.name.c_str(), m.message.c_str(),
                  m.kcase.id().c_str(), m.repro.c_str());
    }
    if (!k.message.empty() && k.outcome != Outcome::passed) std::printf("  %s: %s\n", k.name.c_str(), k.message.c_str());
  }
}

}  // namespace

int run_list(const ListArgs& args) {
  if (args.ops) {
    for (const auto& op : op_catalogue()) std::printf("%s\n", op.name.c_str());
    return 0;
  }
  std::printf("%-34s %-9s %-7s %-14s %s\n", "kernel", "op", "backend", "dtypes", "source");
  for (const auto& k : registered_kernels()) {
    if (k.mutant && !args.all) continue;
    std::string dtypes;
    for (DType d : k.dtypes) dtypes += (dtypes.empty() ? "" : ",") + std::string(dtype_name(d));
    std::printf("%-34s %-9s %-7s %-14s %s%s\n", k.name.c_str(), k.op.c_str(), backend_name(k.backend), dtypes.c_str(),
                k.source.c_str(), k.mutant ? "  (mutant: must be rejected)" : "");
  }
  return 0;
}

int run_check(const CheckArgs& args) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string why;
  Backend backend;
  if (args.backend.empty()) {
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
    for (const auto& k : registered_kernels())
      if (k.backend == backend && !k.mutant) selected.push_back(&k);
  } else {
    for (const auto& name : args.kernels) {
      const auto& k = find_kernel(name);
      if (k.backend != backend)
        throw_usage("kernel '" + name + "' runs on the " + backend_name(k.backend) + " backend, not " +
                    backend_name(backend) + " (pass --backend " + backend_name(k.backend) + ")");
      selected.push_back(&k);
    }
  }
  if (selected.empty()) throw_usage(std::string("no kernels to check on the ") + backend_name(backend) + " backend");

  fs::create_directories(args.out_dir);
  Runner runner(backend);
  const auto environment = runner.environment();
  RunReport report;
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
  if (o.atol) report.meta.config["atol"] = *o.atol;
  if (o.rtol) report.meta.config["rtol"] = *o.rtol;

  CheckOptions options = args.options;
  const bool tty = isatty(fileno(stderr));
  if (!args.quiet)
    options.progress = [tty](const std::string& line) {
      if (tty) std::fprintf(stderr, "\r\033[K%s", line.c_str());
      else std::fprintf(stderr, "%s\n", line.c_str());
    };
  const fs::path out(args.out_dir);
  auto write_reports = [&] {
    report.meta.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    write_file(out / "report.json", to_json(report).dump(2) + "\n");
    std::ostringstream junit, md;
    write_junit(junit, report);
    write_markdown(md, report);
    write_file(out / "junit.xml", junit.str());
    write_file(out / "summary.md", md.str());
  };
  for (size_t i = 0; i < selected.size(); ++i) {
    if (!args.quiet)
      std::fprintf(stderr, "[%zu/%zu] %s (%s, %s)\n", i + 1, selected.size(), selected[i]->name.c_str(),
                   selected[i]->op.c_str(), backend_name(backend));
    report.kernels.push_back(check_kernel(runner, *selected[i], options));
    if (tty && !args.quiet) std::fprintf(stderr, "\n");
    write_reports();  // after every kernel: a crash later loses nothing already measured
  }
  adjust_speed_decisions(report.kernels);
  write_reports();

  print_table(report);
  if (!env("GITHUB_ACTIONS").empty()) write_github_annotations(std::cout, report);
  if (!env("GITHUB_STEP_SUMMARY").empty()) {
    std::ofstream summary(env("GITHUB_STEP_SUMMARY"), std::ios::app);
    write_markdown(summary, report);
  }
  const auto code = report.exit_code(args.inconclusive_fails);
  std::printf("\nreports: %s/report.json, junit.xml, summary.md — exit %d\n", args.out_dir.c_str(), static_cast<int>(code));
  return static_cast<int>(code);
}

int run_replay(const ReplayArgs& args) {
  Case c;
  if (fs::exists(args.case_ref)) {
    std::ifstream f(args.case_ref);
    nlohmann::json j;
    try {
      f >> j;
    } catch (const std::exception& e) {
      throw_usage(args.case_ref + ": not valid JSON: " + e.what());
    }
    // Accept a bare case, a case result, or a report (its first minimal case).
    if (j.contains("kernels")) {
      for (const auto& k : j.at("kernels"))
        if (k.contains("correctness") && k.at("correctness").contains("minimal")) {
          j = k.at("correctness").at("minimal").at("case");
          break;
        }
    } else if (j.contains("case")) {
      j = j.at("case");
    }
    c = j.get<Case>();
  } else {
    c = Case::from_id(args.case_ref);
  }
  const auto& kernel = find_kernel(args.kernel);
  if (kernel.op != c.op)
    throw_usage("case " + c.id() + " is for op '" + c.op + "' but kernel '" + kernel.name + "' implements '" +
                kernel.op + "'");
  Runner runner(kernel.backend);
  CheckOptions options;
  options.rule = args.rule;
  options.atol = args.atol;
  options.rtol = args.rtol;
  const auto result = runner.check_case(kernel, c, rule_for(find_op(c.op), c.dtype, options));
  std::printf("%s %s on %s\n  rule %s: observed %.6g, allowed %.6g, margin %.4f\n  max abs err vs reference %.6g, vs fp64 oracle %.6g (reference's own: %.6g)\n",
              outcome_name(result.outcome), kernel.name.c_str(), c.id().c_str(), result.rule.c_str(), result.observed,
              result.allowed, result.margin, result.vs_reference.max_abs, result.vs_oracle.max_abs,
              result.reference_vs_oracle_max_abs);
  if (!result.message.empty()) std::printf("  %s\n", result.message.c_str());
  return result.outcome == Outcome::failed ? static_cast<int>(ExitCode::correctness) : 0;
}

int run_validate(const ValidateArgs& args) {
  package::ValidateOptions options;
  options.compile = args.compile;
  options.compile_options.arch = args.arch;
  options.check.find_op = [](const std::string& name) -> const OpSignature* {
    for (const auto& op : op_catalogue())
      if (op.name == name) return &op;
    return nullptr;
  };
  for (const auto& op : op_catalogue()) options.check.known_ops.push_back(op.name);
  const auto report = package::validate_package(args.package_dir, options);
  if (!report.ok()) {
    std::fprintf(stderr, "%s", package::format_problems(report.problems).c_str());
    std::fprintf(stderr, "kgate: %zu problem(s) in %s\n", report.problems.size(), args.package_dir.c_str());
    return static_cast<int>(ExitCode::usage);
  }
  std::printf("valid: %s\n", package::format_summary(report).c_str());
  return 0;
}

int run_compare(const CompareArgs& args) {
  auto load = [](const std::string& path) {
    std::ifstream f(path);
    nlohmann::json j;
    try {
      f >> j;
    } catch (const std::exception& e) {
      throw_usage(path + ": not valid JSON: " + e.what());
    }
    return report_from_json(j);
  };
  const auto old_report = load(args.old_report);
  const auto new_report = load(args.new_report);
  // Absolute times from two runs are not comparable without an A/A calibration: compare the
  // in-run ratios against eager, and the correctness outcomes.
  std::printf("%-34s %-14s %-14s %-12s %-12s\n", "kernel", "old", "new", "old x eager", "new x eager");
  int worse = 0;
  for (const auto& nk : new_report.kernels) {
    const KernelReport* ok = nullptr;
    for (const auto& k : old_report.kernels)
      if (k.name == nk.name) ok = &k;
    auto worst_ratio = [](const KernelReport* k) {
      double r = 0;
      if (k)
        for (const auto& s : k->speed) r = std::max(r, s.ratio);
      return r;
    };
    const double ro = worst_ratio(ok), rn = worst_ratio(&nk);
    std::printf("%-34s %-14s %-14s %-12s %-12s\n", nk.name.c_str(), ok ? outcome_name(ok->outcome) : "(new)",
                outcome_name(nk.outcome), ro > 0 ? fmt("x%.3f", ro).c_str() : "-", rn > 0 ? fmt("x%.3f", rn).c_str() : "-");
    if (ok && ok->outcome == Outcome::passed && nk.outcome != Outcome::passed) ++worse;
  }
  std::printf("\n%d kernel(s) got worse\n", worse);
  return worse > 0 ? static_cast<int>(new_report.exit_code(false)) : 0;
}

}  // namespace kgate::cli
