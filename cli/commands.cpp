// The kgate verbs: list, check (in-tree kernels and exported packages, optionally against a baseline
// package), replay, validate, compare.
#include "cli/commands.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <mutex>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "cli/output.hpp"
#include "cli/sanitize.hpp"
#include "cli/worker.hpp"
#include "core/error.hpp"
#include "core/report_text.hpp"
#include "core/html_report.hpp"
#include "core/rng.hpp"
#include "core/safe_text.hpp"
#include "core/safetensors.hpp"
#include "gates/props/shrink.hpp"
#include "references/catalogue.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/package/pack.hpp"
#include "runtime/package/package_kernel.hpp"
#include "runtime/package/validate.hpp"
#include "runtime/torch_op.hpp"

namespace kgate::cli {
namespace fs = std::filesystem;

namespace {

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

/// The slowest measured comparison of `k` against `baseline` (nullptr: none).
const SpeedComparison* worst_against(const KernelReport& k, const std::string& baseline) {
  const SpeedComparison* worst = nullptr;
  for (const auto& s : k.speed)
    if (s.baseline == baseline && s.decision != Outcome::skipped && (!worst || s.ratio > worst->ratio)) worst = &s;
  if (!worst)  // every comparison skipped: show one of them
    for (const auto& s : k.speed)
      if (s.baseline == baseline) return &s;
  return worst;
}

std::string speed_cell(const KernelReport& k) {
  const SpeedComparison* worst = worst_against(k, "eager");
  if (!worst) return "-";
  return speed_words(worst->ratio) + ", " + outcome_name(worst->decision);
}

std::string speedup_text(const std::optional<double>& v) { return v ? speedup_words(*v) : "-"; }

void print_table(const RunReport& report) {
  std::vector<std::vector<std::string>> rows = {{"kernel", "op", "backend", "correctness", "margin", "speed vs eager (worst)"}};
  for (const auto& k : report.kernels)
    rows.push_back({k.name, k.op, k.backend, correctness_cell(k), fmt("%.3f", k.correctness.worst_margin), speed_cell(k)});
  const auto widths = column_widths(rows);
  std::printf("\n%s\n", aligned_row(rows.front(), widths).c_str());
  size_t row = 0;
  for (const auto& k : report.kernels) {
    std::printf("%s\n", aligned_row(rows[++row], widths).c_str());
    if (k.correctness.fallback > 0)
      std::printf("  %s: %lld of %lld cases outside its guard ran the reference (fallback)\n", k.name.c_str(),
                  static_cast<long long>(k.correctness.fallback), static_cast<long long>(k.correctness.cases));
    for (const auto& r : k.correctness.captured)
      std::printf("  %s: captured inputs %s: %s%s\n", k.name.c_str(), inline_untrusted(r.kcase.captured).c_str(),
                  outcome_name(r.outcome),
                  r.outcome == Outcome::passed ? fmt(" (margin %.3f)", r.margin).c_str()
                                               : (" [" + r.rule + "] " + inline_untrusted(r.message, 300)).c_str());
    if (!k.baseline.empty()) {
      std::string line = "  " + k.name + " vs baseline " + k.baseline + ":";
      if (k.baseline_correctness)
        line += " baseline correctness " + std::to_string(k.baseline_correctness->passed) + "/" +
                std::to_string(k.baseline_correctness->cases) + ";";
      const SpeedComparison* worst = worst_against(k, k.baseline);
      line += worst ? " speed (worst) " + speed_words(worst->ratio) + ", " + outcome_name(worst->decision)
                    : std::string(" speed not measured");
      std::printf("%s\n", line.c_str());
    }
    if (k.workload_variants > 0) {
      std::string line = "  " + k.name + " workload (" + std::to_string(k.workload_variants) + " variants, " +
                         std::to_string(k.workload_calls) + " calls): " +
                         speedup_text(k.workload_speedup_vs_eager) + " than eager";
      if (!k.baseline.empty()) line += ", " + speedup_text(k.workload_speedup_vs_baseline) + " than " + k.baseline;
      std::printf("%s\n", line.c_str());
    }
  }
  for (const auto& k : report.kernels) {
    for (const auto& s : k.speed) {
      if (s.decision == Outcome::unchanged || s.decision == Outcome::skipped || s.blocks == 0) {
        // Not timed: no figures, the note says why.
        std::printf("  %s %s: %s — %s\n", k.name.c_str(), s.kcase.id().c_str(), outcome_name(s.decision), s.note.c_str());
        continue;
      }
      std::printf("  %s %s: %s than %s (time ratio %.3f [%.3f, %.3f]; %.1f us vs %.1f us, %lld blocks, %s) %s%s\n",
                  k.name.c_str(), s.kcase.id().c_str(), speed_words(s.ratio).c_str(), s.baseline.c_str(), s.ratio,
                  s.ratio_lower, s.ratio_upper, s.candidate_median_ns / 1e3, s.baseline_median_ns / 1e3,
                  static_cast<long long>(s.blocks), s.timer.c_str(), outcome_name(s.decision),
                  s.note.empty() ? "" : (" — " + s.note).c_str());
    }
    if (k.correctness.minimal) {
      const auto& m = *k.correctness.minimal;
      std::printf("\nFAILED %s: %s\n  minimal case: %s\n  repro: %s\n", k.name.c_str(), m.message.c_str(),
                  m.kcase.id().c_str(), m.repro.c_str());
    }
    if (!k.message.empty() && k.outcome != Outcome::passed) std::printf("  %s: %s\n", k.name.c_str(), k.message.c_str());
  }
  std::string twins;  // one line for all of them
  for (const auto& k : report.kernels)
    for (const auto& w : k.correctness.warnings) {
      if (w.find(kTwinNotTimed) != std::string::npos)
        twins += (twins.empty() ? "" : ", ") + k.name;
      else
        std::printf("  warning (%s): %s\n", k.name.c_str(), w.c_str());
    }
  if (!twins.empty())
    std::printf("  not timed (correctness twins for the mutant suite, not deployment candidates): %s\n", twins.c_str());
}

RunReport load_report(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw_usage("cannot read " + path + ": no such file, or not readable");
  nlohmann::json j;
  try {
    f >> j;
  } catch (const std::exception& e) {
    throw_usage(path + ": not valid JSON: " + e.what());
  }
  try {
    return report_from_json(j);
  } catch (const Error& e) {
    throw_usage(path + ": " + e.what());
  }
}

/// report.json, junit.xml, summary.md and report.html under `out`, each written whole.
void write_report_files(const RunReport& report, const fs::path& out) {
  write_file_atomically(out / "report.json", to_json(report).dump(2) + "\n");
  std::ostringstream junit, md;
  write_junit(junit, report);
  write_markdown(md, report);
  write_file_atomically(out / "junit.xml", junit.str());
  write_file_atomically(out / "summary.md", md.str());
  write_file_atomically(out / "report.html", render_html(report));
}

/// The end of a run (kgate check, kgate merge): the multiple-comparison correction over every
/// comparison, the reports, the table, GitHub annotations and step summary; returns the exit code.
int conclude(RunReport& report, const std::string& out_dir, bool inconclusive_fails) {
  // The policy every writer follows (JUnit, the summary, the annotations agree with the exit code).
  report.meta.config["inconclusive_fails"] = inconclusive_fails;
  adjust_speed_decisions(report.kernels);
  write_report_files(report, out_dir);
  print_table(report);
  if (!env("GITHUB_ACTIONS").empty()) write_github_annotations(std::cout, report);
  if (!env("GITHUB_STEP_SUMMARY").empty()) {
    std::ofstream summary(env("GITHUB_STEP_SUMMARY"), std::ios::app);
    write_markdown(summary, report);
  }
  if (!report.google_benchmark.empty()) {
    size_t entries = 0;
    for (const auto& g : report.google_benchmark) entries += g.benchmarks.size();
    std::printf("\ngoogle benchmark: %zu file(s), %zu entries kept in report.json (informational)\n",
                report.google_benchmark.size(), entries);
  }
  const auto code = report.exit_code(inconclusive_fails);
  std::printf("\nreports: %s/report.json, junit.xml, summary.md, report.html — exit %d\n", out_dir.c_str(),
              static_cast<int>(code));
  return static_cast<int>(code);
}

// Workers per kernel: the first, and one more after each fault.
constexpr int kMaxFaultRestarts = 16;
// Shrink candidates of a faulting case, each tried in a fresh worker (a few seconds each).
constexpr int64_t kMaxFaultShrinkAttempts = 24;

// A message on one line (the progress file holds one case per line).
std::string one_line(std::string text) {
  for (char& ch : text)
    if (ch == '\n' || ch == '\r') ch = ' ';
  if (text.size() > 2000) text.resize(2000);
  return text;
}

// The per-case watchdog: follows a worker's progress file while it runs, and calls a correctness
// case hung once it has run for max(floor, 20 x the slowest case so far), at most max(floor, 600 s).
// Cases after the list (behaviour checks, timing) are bounded by --kernel-timeout alone.
class CaseWatch {
 public:
  CaseWatch(fs::path progress, double floor_s) : path_(std::move(progress)), floor_s_(floor_s) {}

  std::optional<std::string> operator()() {
    read_new_lines();
    if (current_.empty()) return std::nullopt;
    const double ran = seconds_since(started_);
    const double bound = std::min(std::max(floor_s_, 20 * slowest_s_), std::max(floor_s_, 600.0));
    if (ran <= bound) return std::nullopt;
    char text[160];
    std::snprintf(text, sizeof text, "case %s ran for %.0f s; a case may run %.0f s (max(--case-timeout %.0f s, ",
                  current_.c_str(), ran, bound, floor_s_);
    char tail[96];
    std::snprintf(tail, sizeof tail, "20 x the slowest case so far, %.3g s), at most %.0f s)", slowest_s_,
                  std::max(floor_s_, 600.0));
    return std::string(text) + tail;
  }

 private:
  static double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }
  void read_new_lines() {
    std::ifstream in(path_);
    if (!in) return;
    in.seekg(offset_);
    std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    offset_ += static_cast<std::streamoff>(chunk.size());
    pending_ += chunk;
    for (size_t nl; (nl = pending_.find('\n')) != std::string::npos;) {
      const std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      std::istringstream f(line);
      std::string kind, index, total, id;
      f >> kind >> index >> total >> id;
      if (kind == "start") {
        current_ = id;
        started_ = std::chrono::steady_clock::now();
      } else if (kind == "end" || kind == "done") {
        if (!current_.empty()) slowest_s_ = std::max(slowest_s_, seconds_since(started_));
        current_.clear();
      }
    }
  }

  fs::path path_;
  double floor_s_;
  std::streamoff offset_ = 0;
  std::string pending_, current_;
  std::chrono::steady_clock::time_point started_;
  double slowest_s_ = 0;
};

// What a worker noted of its correctness cases (its progress file): the cases it finished, the
// one it started and did not finish, and whether it got to the end of the list.
struct WorkerProgress {
  struct Finished {
    int64_t index = 0;
    std::string id, outcome, rule, message;
  };
  std::vector<Finished> finished;
  std::optional<int64_t> started;  // index of a case begun and never finished
  std::string started_id;
  int64_t total = 0;
  bool done = false;
};
WorkerProgress read_progress(const fs::path& path) {
  WorkerProgress p;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string kind;
    f >> kind;
    if (kind == "done") {
      f >> p.total;
      p.done = true;
      p.started.reset();
    } else if (kind == "start") {
      int64_t index = 0;
      if (f >> index >> p.total >> p.started_id) p.started = index;
    } else if (kind == "end") {
      WorkerProgress::Finished e;
      if (!(f >> e.index >> p.total >> e.id >> e.outcome >> e.rule)) continue;
      std::getline(f, e.message);
      if (!e.message.empty() && e.message.front() == ' ') e.message.erase(0, 1);
      p.finished.push_back(std::move(e));
      p.started.reset();
    }
  }
  return p;
}

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
  for (auto& f : b.failures)
    if (a.failures.size() < 10) a.failures.push_back(std::move(f));
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

package::ValidateOptions validate_options(const std::string& arch) {
  package::ValidateOptions options;
  options.compile_options.arch = arch;
  options.check.find_op = [](const std::string& name) { return lookup_op(name); };
  options.check.load_op_file = [](const std::string& path) { load_op_files(path); };
  for (const auto& op : op_catalogue()) options.check.known_ops.push_back(op.name);
  return options;
}

}  // namespace

std::string device_arch() {
  const auto info = cuda::device_info();
  return "sm_" + std::to_string(info.sm_major) + std::to_string(info.sm_minor);
}

std::optional<LoadedPackage> load_package(const std::string& dir, const std::string& arch, bool quiet) {
  const auto report = package::validate_package(dir, validate_options(arch));
  if (!report.ok()) {
    std::fprintf(stderr, "%s", package::format_problems(report.problems).c_str());
    std::fprintf(stderr, "kgate: %zu problem(s) in %s\n", report.problems.size(), dir.c_str());
    return std::nullopt;
  }
  if (!quiet) std::fprintf(stderr, "package %s: %s\n", dir.c_str(), package::format_summary(report).c_str());
  LoadedPackage p;
  p.manifest = report.manifest;
  p.op = &find_op(report.manifest.op);
  p.kernel = package::make_package_kernel(report.manifest, *report.compiled, *p.op);
  return p;
}

void check_unique_package_names(const std::vector<std::string>& dirs,
                                const std::vector<LoadedPackage>& packages) {
  std::map<std::string, std::string> seen;  // name -> directory
  for (std::size_t i = 0; i < packages.size() && i < dirs.size(); ++i) {
    const std::string& name = packages[i].manifest.name;
    auto [it, fresh] = seen.emplace(name, dirs[i]);
    if (!fresh)
      throw_usage("two packages are named \"" + name + "\": " + it->second + " and " + dirs[i] +
                  ". A run names each kernel by its package's name (workers, reports, shards), so "
                  "each package needs a name of its own: change \"name\" in one kgate.json");
  }
}

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

std::vector<int> parse_devices(const std::string& text, int count, const char* visible) {
  std::vector<int> out;
  if (text == "all") {
    if (count <= 0)
      throw_usage("--devices all: this process sees no CUDA device" +
                  std::string(visible ? " (CUDA_VISIBLE_DEVICES=" + std::string(visible) + ")" : ""));
    for (int d = 0; d < count; ++d) out.push_back(d);
    return out;
  }
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    int d = -1;
    try {
      d = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || d < 0)
      throw_usage("--devices " + text + ": '" + item + "' is not a device ordinal; expected 'all' or ordinals such as 0,1");
    if (std::find(out.begin(), out.end(), d) != out.end())
      throw_usage("--devices " + text + ": device " + item + " is listed twice");
    if (count > 0 && d >= count)
      throw_usage("--devices " + text + ": this process sees " + std::to_string(count) + " device(s)" +
                  (visible ? " (CUDA_VISIBLE_DEVICES=" + std::string(visible) + ")" : std::string()) +
                  "; ordinals are numbered from 0");
    if (visible) cuda::visible_devices_for(d, visible);  // inside CUDA_VISIBLE_DEVICES (throws)
    out.push_back(d);
  }
  if (out.empty()) throw_usage("--devices: expected 'all' or ordinals such as 0,1");
  return out;
}

CheckOptions package_options(const CheckOptions& base, const LoadedPackage& p) {
  CheckOptions o = base;
  constexpr int64_t kMaxElements = int64_t{1} << 24;
  o.extra_cases = package::guard_boundary_cases(p.manifest, *p.op, base.seed, kMaxElements);
  props::GeneratorOptions gen;
  gen.seed = derive_seed(base.seed, "inside/" + p.manifest.name, 0);
  gen.cases = std::max<int64_t>(1, base.cases / 2);
  gen.families = base.families;
  gen.max_elements = kMaxElements;
  std::set<std::string> seen;
  for (const auto& c : o.extra_cases) seen.insert(c.id());
  for (const auto& c : props::generate_cases(*p.op, traits_of(p.kernel), gen)) {
    if (c.family == "layout") continue;  // layouts outside the guard are what that family is for
    auto inside = package::move_inside_guard(p.manifest, *p.op, c);
    if (!inside || inside->numel_hint() > kMaxElements || !seen.insert(inside->id()).second) continue;
    inside->family = c.family;
    o.extra_cases.push_back(std::move(*inside));
  }
  const auto variants = package::variant_cases(p.manifest, *p.op, base.seed);
  for (const auto& v : variants) {
    if (v.kcase.numel_hint() <= kMaxElements) o.extra_cases.push_back(v.kcase);
    o.timed_cases.push_back({v.kcase, v.calls});
  }
  if (variants.empty())
    for (const auto& c : speed_cases(*p.op, p.kernel, base.seed, base.speed_cases))
      if (auto inside = package::move_inside_guard(p.manifest, *p.op, c)) o.timed_cases.push_back({*inside, 0});
  for (const auto& f : p.manifest.captured_inputs) o.captured.push_back({f, (p.manifest.dir / f).string()});
  return o;
}

int run_list(const ListArgs& args) {
  if (args.ops) {
    // One op per line: name, signature, case dtypes, where it is defined.
    const auto tensors = [](const std::vector<TensorSpec>& ts) {
      std::string out;
      for (const auto& t : ts) {
        std::string shape;
        for (const auto& d : t.shape) shape += (shape.empty() ? "" : ",") + d;
        out += (out.empty() ? "" : ", ") + t.name + "[" + shape + "]" + (t.dtype.empty() ? "" : ":" + t.dtype);
      }
      return out;
    };
    std::vector<std::vector<std::string>> rows = {{"op", "signature", "dtypes", "defined by"}};
    for (const auto& op : op_catalogue()) {
      std::string dtypes;
      for (DType d : op.dtypes) dtypes += (dtypes.empty() ? "" : ",") + std::string(dtype_name(d));
      rows.push_back({op.name, "(" + tensors(op.inputs) + ") -> (" + tensors(op.outputs) + ")", dtypes, op.origin});
    }
    const auto widths = column_widths(rows);
    for (const auto& r : rows) std::printf("%s\n", aligned_row(r, widths).c_str());
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"kernel", "op", "backend", "dtypes", "source"}};
  for (const auto& k : registered_kernels()) {
    if (k.mutant && !args.all) continue;
    std::string dtypes;
    for (DType d : k.dtypes) dtypes += (dtypes.empty() ? "" : ",") + std::string(dtype_name(d));
    rows.push_back({k.name, k.op, backend_name(k.backend), dtypes,
                    k.source + (k.control  ? "  (control: must pass)"
                                : k.mutant ? "  (mutant: must be rejected)"
                                           : "")});
  }
  const auto widths = column_widths(rows);
  for (const auto& r : rows) std::printf("%s\n", aligned_row(r, widths).c_str());
  return 0;
}

int run_check(const CheckArgs& args) {
  const auto t0 = std::chrono::steady_clock::now();
  // A worker confines itself before it starts CUDA or runs anything of a package or an op file.
  std::vector<std::string> readable = args.packages;
  readable.push_back(args.baseline_package);
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
  bool have_device = false;
  if (!args.packages.empty()) {
    have_device = cuda::device_available(&why);
    const std::string arch = !args.arch.empty() ? args.arch : have_device ? device_arch() : "sm_90";
    for (const auto& dir : args.packages) {
      auto p = load_package(dir, arch, args.quiet);
      if (!p) return static_cast<int>(ExitCode::usage);
      packages.push_back(std::move(*p));
    }
    check_unique_package_names(args.packages, packages);
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
    bool torch_ops = false;
    for (const auto& k : registered_kernels()) torch_ops |= torch_op_memory_note(k.name) != nullptr;
    if (torch_ops) {
      for (const auto& k : registered_kernels())
        if (torch_op_memory_note(k.name) && k.backend == backend) selected.push_back(&k);
      if (selected.empty())
        throw_usage(std::string("no --torch-op runs on the ") + backend_name(backend) + " backend (a cpu op is given as cpu/NS::OP=...)");
    } else if (packages.empty()) {
      for (const auto& k : registered_kernels())
        if (k.backend == backend && !k.mutant) selected.push_back(&k);
    }
  } else {
    for (const auto& name : args.kernels) {
      const auto& k = find_kernel(name);
      if (k.backend != backend)
        throw_usage("kernel '" + name + "' runs on the " + backend_name(k.backend) + " backend, not " +
                    backend_name(backend) + " (pass --backend " + backend_name(k.backend) + ")");
      selected.push_back(&k);
    }
  }
  if (selected.empty() && packages.empty())
    throw_usage(std::string("no kernels to check on the ") + backend_name(backend) + " backend");
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
  if (!sandbox.empty()) report.meta.config["sandbox"] = sandbox;
  if (o.atol) report.meta.config["atol"] = *o.atol;
  if (o.rtol) report.meta.config["rtol"] = *o.rtol;

  CheckOptions options = args.options;
  options.in_worker = args.in_worker;
  // Every speed comparison of the run is Holm-corrected with every other: each must be able to
  // decide at that strictness.
  const int64_t run_comparisons =
      args.run_comparisons > 0 ? args.run_comparisons
                               : static_cast<int64_t>(selected.size() + packages.size()) * options.speed_cases *
                                     (baseline ? 2 : 1);
  options.run_comparisons = run_comparisons;
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
        std::string line = index >= total ? "done " + std::to_string(total)
                           : !r ? "start " + std::to_string(index) + " " + std::to_string(total) + " " + c.id()
                                : "end " + std::to_string(index) + " " + std::to_string(total) + " " + c.id() + " " +
                                      outcome_name(r->outcome) + " " + (r->rule.empty() ? "-" : r->rule) + " " +
                                      one_line(r->message);
        line += "\n";
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
              " times, and kgate starts at most " + std::to_string(kMaxFaultRestarts) + " workers per kernel");
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
    report.kernels.push_back(check_kernel(*runner, *selected[i], options));
    progress.end_line();
    write_reports();  // after every kernel: a crash later loses nothing already measured
  }
  for (size_t i = 0; i < packages.size() && !isolate; ++i) {
    const auto& p = packages[i];
    if (!args.quiet)
      std::fprintf(stderr, "[%zu/%zu] package %s %s (%s, %s)%s\n", selected.size() + i + 1, total,
                   p.manifest.name.c_str(), p.manifest.version.c_str(), p.manifest.op.c_str(), p.kernel.source.c_str(),
                   baseline ? (" against baseline " + baseline->kernel.name).c_str() : "");
    report.kernels.push_back(check_kernel(*runner, p.kernel, package_options(options, p), baseline ? &baseline->kernel : nullptr));
    progress.end_line();
    write_reports();
  }
  if (args.in_worker) return static_cast<int>(report.exit_code(args.inconclusive_fails));  // the parent judges
  report.meta.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return conclude(report, args.out_dir, args.inconclusive_fails);
}

Shard parse_shard(const std::string& text) {
  Shard s;
  char slash = 0, rest = 0;
  std::istringstream in(text);
  if (!(in >> s.index >> slash >> s.count) || slash != '/' || (in >> rest) || s.count < 1 || s.index < 1 ||
      s.index > s.count)
    throw_usage("--shard '" + text + "': expected i/n with 1 <= i <= n (e.g. --shard 2/4)");
  return s;
}

std::vector<std::string> shard_names(std::vector<std::string> names, const Shard& s) {
  std::sort(names.begin(), names.end());
  std::vector<std::string> mine;
  for (size_t i = 0; i < names.size(); ++i)
    if (static_cast<int>(i % static_cast<size_t>(s.count)) == s.index - 1) mine.push_back(names[i]);
  return mine;
}

int run_merge(const MergeArgs& args) {
  std::vector<RunReport> shards;
  for (const auto& path : args.reports) shards.push_back(load_report(path));
  RunReport report = merge_reports(shards, args.reports);
  fs::create_directories(args.out_dir);
  std::printf("merged %zu report(s): %zu kernel(s)\n", shards.size(), report.kernels.size());
  return conclude(report, args.out_dir, args.inconclusive_fails);
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
    // Accept a bare case, a case result, or a report: the minimal failing case of the kernel
    // replayed (else the report's first one).
    if (j.is_object() && j.contains("kernels") && j.at("kernels").is_array()) {
      const nlohmann::json* found = nullptr;
      for (const auto& k : j.at("kernels")) {
        const auto cr = k.find("correctness");
        if (cr == k.end() || !cr->is_object()) continue;
        const auto m = cr->find("minimal");
        if (m == cr->end() || !m->is_object() || !m->contains("case")) continue;
        const bool named = k.value("name", "") == args.kernel || (!args.package_dir.empty() && !found);
        if (named || !found) found = &m->at("case");
        if (named) break;
      }
      if (!found)
        throw_usage(args.case_ref + " holds no failing case to replay (no kernel of it failed); replay a case id "
                                    "instead (kgate replay --kernel NAME 'op:dtype:dims:layout:values:seed')");
      j = *found;
    } else if (j.is_object() && j.contains("case")) {
      j = j.at("case");
    }
    try {
      c = j.get<Case>();
    } catch (const nlohmann::json::exception& e) {
      throw_usage(args.case_ref + " is not a case, a case result or a kgate report: " + e.what());
    }
  } else {
    c = Case::from_id(args.case_ref);
  }
  if (args.kernel.empty() == args.package_dir.empty())
    throw_usage("replay needs exactly one of --kernel NAME and --package DIR");
  std::optional<LoadedPackage> package;
  if (!args.package_dir.empty()) {
    std::string why;
    const std::string arch =
        !args.arch.empty() ? args.arch : cuda::device_available(&why) ? device_arch() : std::string("sm_90");
    package = load_package(args.package_dir, arch, true);
    if (!package) return static_cast<int>(ExitCode::usage);
  }
  const KernelInfo& kernel = package ? package->kernel : find_kernel(args.kernel);
  if (kernel.op != c.op)
    throw_usage("case " + c.id() + " is for op '" + c.op + "' but kernel '" + kernel.name + "' implements '" +
                kernel.op + "'");
  // A package's captured inputs are named relative to it; others, as given (from the directory
  // kgate check ran in).
  if (c.values == Values::captured && package) {
    if (std::find(package->manifest.captured_inputs.begin(), package->manifest.captured_inputs.end(), c.captured) ==
        package->manifest.captured_inputs.end())
      throw_usage("case " + c.id() + " reads captured inputs '" + c.captured + "', which package " +
                  package->manifest.name + " does not list in captured_inputs");
    c.captured_path = (package->manifest.dir / c.captured).string();
  }
  Runner runner(kernel.backend);
  CheckOptions options;
  options.rule = args.rule;
  options.atol = args.atol;
  options.rtol = args.rtol;
  const auto rule = rule_for(find_op(c.op), c.dtype, options);
  const auto result = runner.check_case(kernel, c, rule);
  std::printf("%s %s on %s\n  rule %s: observed %.6g, allowed %.6g, margin %.4f\n  max abs err vs reference %.6g, vs fp64 oracle %.6g (reference's own: %.6g)\n",
              outcome_name(result.outcome), kernel.name.c_str(), c.id().c_str(), result.rule.c_str(), result.observed,
              result.allowed, result.margin, result.vs_reference.max_abs, result.vs_oracle.max_abs,
              result.reference_vs_oracle_max_abs);
  if (!result.message.empty()) std::printf("  %s\n", result.message.c_str());
  if (package)
    std::printf("  %s\n", result.fallback ? "outside the package's guard: the reference ran (fallback)"
                                           : "inside the package's guard: the package's kernels ran");
  if (result.outcome == Outcome::failed) return static_cast<int>(ExitCode::correctness);
  // The behaviour checks of `kgate check` on the same case, so that a stale-output or determinism
  // failure (whose single runs pass) replays too.
  bool behaviour_failed = false;
  const auto behaviour = [&](const char* what, const CaseResult& r) {
    std::printf("%s check: %s%s%s\n", what, outcome_name(r.outcome), r.message.empty() ? "" : ": ", r.message.c_str());
    if (r.outcome == Outcome::failed) behaviour_failed = true;
  };
  if (!result.fallback) {
    behaviour("stale-output", runner.check_stale(kernel, c, rule));
    if (find_op(c.op).deterministic) behaviour("determinism (bitwise, two runs)", runner.check_deterministic(kernel, c, rule));
  }
  return behaviour_failed ? static_cast<int>(ExitCode::correctness) : 0;
}

int run_validate(const ValidateArgs& args) {
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
    std::fprintf(stderr, "kgate: note: %s differs from its %s (edited after kgate pack): %s; pack it again from its source\n",
                 dir.c_str(), package::kPackRecordFileName, files.c_str());
  }
  return 0;
}

int run_pack(const PackArgs& args) {
  package::PackResult packed;
  try {
    packed = package::pack_package(args.source_dir, args.out_dir);
  } catch (const Error& e) {
    std::fprintf(stderr, "kgate: %s\n", e.what());
    return static_cast<int>(ExitCode::usage);
  }
  if (!args.quiet) {
    std::printf("packed: %s -> %s (%zu files, hashes in %s)\n", args.source_dir.c_str(), args.out_dir.c_str(),
                packed.files.size(), package::kPackRecordFileName);
    for (const auto& r : packed.rewritten) std::printf("  %s\n", r.c_str());
  }
  ValidateArgs validate{args.out_dir, args.compile, args.arch};
  return run_validate(validate);
}

namespace {
/// How bad an outcome is for `kgate compare`: passing ones (passed, fragile, inconclusive,
/// skipped) are 0; then invalid, regressed, failed.
int severity(Outcome o) {
  switch (o) {
    case Outcome::invalid: return 1;
    case Outcome::regressed: return 2;
    case Outcome::failed: return 3;
    default: return 0;
  }
}
ExitCode exit_for(Outcome o) {
  switch (o) {
    case Outcome::failed: return ExitCode::correctness;
    case Outcome::regressed: return ExitCode::regression;
    default: return ExitCode::inconclusive;
  }
}
}  // namespace

int run_compare(const CompareArgs& args) {
  const auto old_report = load_report(args.old_report);
  const auto new_report = load_report(args.new_report);
  // Absolute times from two runs are not comparable without an A/A calibration: compare the
  // in-run ratios against eager, and the outcomes. A kernel got worse when its outcome is worse
  // than before (fragile -> failed, passed -> invalid, ...), when it is new and not passing, or when
  // it is missing from the new report; the exit code is the worst of them (1 correctness or missing,
  // 2 speed, 3 invalid), 0 when none got worse.
  auto worst_ratio = [](const KernelReport* k) {
    double r = 0;
    if (k)
      for (const auto& s : k->speed)
        if (s.baseline == "eager" && s.decision != Outcome::skipped) r = std::max(r, s.ratio);
    return r;
  };
  std::vector<std::vector<std::string>> rows = {{"kernel", "old", "new", "old x eager", "new x eager", ""}};
  int worse = 0;
  ExitCode code = ExitCode::ok;
  auto count = [&](ExitCode c) {
    ++worse;
    if (code == ExitCode::ok || static_cast<int>(c) < static_cast<int>(code)) code = c;
  };
  for (const auto& nk : new_report.kernels) {
    const KernelReport* ok = nullptr;
    for (const auto& k : old_report.kernels)
      if (k.name == nk.name) ok = &k;
    const double ro = worst_ratio(ok), rn = worst_ratio(&nk);
    std::string verdict;
    if (ok && severity(nk.outcome) > severity(ok->outcome)) {
      verdict = "worse";
      count(exit_for(nk.outcome));
    } else if (!ok && severity(nk.outcome) > 0) {
      verdict = "new, not passing";
      count(exit_for(nk.outcome));
    }
    rows.push_back({nk.name, ok ? outcome_name(ok->outcome) : "(new)", outcome_name(nk.outcome),
                    ro > 0 ? speed_words(ro) : "-", rn > 0 ? speed_words(rn) : "-", verdict});
  }
  for (const auto& k : old_report.kernels) {
    bool present = false;
    for (const auto& nk : new_report.kernels) present |= nk.name == k.name;
    if (present) continue;
    rows.push_back({k.name, outcome_name(k.outcome), "(missing)", "-", "-", "missing from the new report"});
    count(ExitCode::correctness);
  }
  const auto widths = column_widths(rows);
  for (const auto& r : rows) std::printf("%s\n", aligned_row(r, widths).c_str());
  std::printf("\n%d kernel(s) got worse\n", worse);
  return static_cast<int>(code);
}

}  // namespace kgate::cli
