// kgate check in worker processes (check_workers.hpp): a kernel's workers, a fresh one after each
// fault, shrinking a fault and --sanitize in fresh workers, and --devices' dealing of kernels to
// GPUs.
#include "cli/check_workers.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "cli/output.hpp"
#include "cli/progress.hpp"
#include "cli/sanitize.hpp"
#include "cli/worker.hpp"
#include "core/device_share.hpp"
#include "core/error.hpp"
#include "core/safe_text.hpp"
#include "gates/correctness/contract.hpp"
#include "gates/props/shrink.hpp"
#include "references/catalogue.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/pipeline.hpp"

namespace kgate::cli {
namespace fs = std::filesystem;
using kgate::plan::WorkerInvocation;

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
  for (const auto& [phase, s] : part.cost_s) into.cost_s[phase] += s;
  for (const auto& [family, sc] : part.cost_family_s) {
    into.cost_family_s[family].first += sc.first;
    into.cost_family_s[family].second += sc.second;
  }
  if (a.contract.is_object() && b.contract.is_object())
    for (const char* k : {"outside", "refused", "wrong"})
      a.contract[k] = a.contract.value(k, int64_t{0}) + b.contract.value(k, int64_t{0});
  else if (b.contract.is_object()) a.contract = b.contract;
  // Past the cap of 10, the first few faults still: each names its CUDA error.
  const auto is_fault = [](const CaseResult& r) {
    return r.rule == Reason::fault || r.rule == Reason::crash;
  };
  auto faults_kept = std::count_if(a.failures.begin(), a.failures.end(), is_fault);
  for (auto& f : b.failures) {
    if (a.failures.size() < 10) a.failures.push_back(std::move(f));
    else if (is_fault(f) && faults_kept < 3) {
      ++faults_kept;
      a.failures.push_back(std::move(f));
    }
  }
  a.faulted.insert(a.faulted.end(), b.faulted.begin(), b.faulted.end());
  a.reference_faulted.insert(a.reference_faulted.end(), b.reference_faulted.begin(),
                             b.reference_faulted.end());
  a.reference_copies_at = b.reference_copies_at;
  for (auto& r : b.captured) a.captured.push_back(std::move(r));
  a.not_run = b.not_run;
  a.resume_at = b.resume_at;
  for (auto& w : b.warnings)
    if (std::find(a.warnings.begin(), a.warnings.end(), w) == a.warnings.end())
      a.warnings.push_back(std::move(w));
  // A minimal case that was shrunk (not a fault) wins; the smallest of them.
  if (b.minimal && (!a.minimal || a.minimal->rule == Reason::fault ||
                    (b.minimal->rule != Reason::fault &&
                     b.minimal->kcase.numel_hint() < a.minimal->kcase.numel_hint())))
    a.minimal = std::move(b.minimal);
  if (a.coverage.is_null()) a.coverage = std::move(b.coverage);  // the first worker's: all cases
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

// A worker of the kernel that tries one case alone, without timing, writing under `out_dir`
// (shrinking a fault, --sanitize).
WorkerInvocation one_case_worker(WorkerInvocation worker, const fs::path& out_dir, const Case& c) {
  worker.out_dir = out_dir.string();
  worker.one_case = c.id();
  return worker;
}

// The faulting case, shrunk by running each candidate in a fresh worker (a fault ends the CUDA
// context, so candidates cannot share one). The minimal case is one that ran and faulted.
void shrink_fault_in_workers(KernelReport& kr, const KernelInfo& k, const WorkerInvocation& child,
                             const fs::path& worker_out, const CheckArgs& args) {
  auto& c = kr.correctness;
  if (c.minimal && c.minimal->rule != Reason::fault && c.minimal->rule != Reason::crash)
    return;  // shrunk in process
  const CaseResult* fault = nullptr;
  for (const auto& f : c.failures)
    if ((f.rule == Reason::fault || f.rule == Reason::crash) &&
        (!fault || f.kcase.numel_hint() < fault->kcase.numel_hint()))
      fault = &f;
  if (!fault) return;
  const OpSignature& op = find_op(k.op);
  std::optional<CaseResult> last_fault;
  const auto faults = [&](const Case& candidate) {
    const auto attempt = one_case_worker(child, worker_out / "shrink", candidate);
    std::error_code ignored;
    fs::remove(worker_out / "shrink" / "progress", ignored);
    auto w =
        run_worker(attempt, (worker_out / "shrink" / "report.json").string(), args.kernel_timeout_s,
                   CaseWatch(worker_out / "shrink" / "progress", args.case_timeout_s));
    if (!w.ok && !w.hung && read_progress(worker_out / "shrink" / "progress").started) {
      // It crashed its worker again: that case still fails the same way.
      CaseResult cr = *fault;
      cr.kcase = candidate;
      cr.outcome = Outcome::failed;
      cr.outside_contract.clear();
      cr.message = "kernel '" + k.name + "': " + w.failure;
      cr.repro = repro_command(k, candidate);
      // As the crash it stands for: outside the kernel's contract, that finding.
      const KernelSettings settings = resolve_settings(op, k.name, args.options);
      if (settings.gates.contract) {
        correctness::ContractTally tally;
        std::vector<std::string> unused;
        correctness::judge_against_contract(cr, *settings.gates.contract, op, false, tally, unused);
      }
      last_fault = cr;
      return true;
    }
    if (!w.ok || w.report.kernels.empty()) return false;
    const auto& cr = w.report.kernels.front().correctness;
    if (cr.faulted.empty() || cr.failures.empty()) return false;
    last_fault = cr.failures.front();
    return true;
  };
  if (!args.quiet)
    std::fprintf(stderr, "kgate: %s: shrinking the faulting case %s in fresh workers\n",
                 k.name.c_str(), fault->kcase.id().c_str());
  const auto shrunk = props::shrink(fault->kcase, op, props::all_tile_sizes(traits_of(k)), faults,
                                    kMaxFaultShrinkAttempts);
  CaseResult minimal = *fault;
  if (shrunk.steps > 0 && last_fault && last_fault->kcase.id() == shrunk.minimal.id())
    minimal = *last_fault;
  else if (shrunk.steps > 0 && faults(shrunk.minimal)) minimal = *last_fault;
  minimal.kcase.family = fault->kcase.family;
  c.minimal = minimal;
  if (!args.quiet)
    std::fprintf(stderr, "kgate: %s: minimal faulting case %s (%lld reductions, %lld workers)\n",
                 k.name.c_str(), minimal.kcase.id().c_str(), static_cast<long long>(shrunk.steps),
                 static_cast<long long>(shrunk.attempts));
}

// --sanitize: the largest case of each family, each in a fresh worker under compute-sanitizer (a
// finding is a failure of its case; a sanitizer that cannot run is said, SKIPPED, and changes
// nothing). Caching is off in those workers, so that every tensor is an allocation of its own and
// memcheck sees its bounds.
void sanitize_in_workers(KernelReport& kr, const KernelInfo& k, const LoadedPackage* package,
                         const WorkerInvocation& child, const fs::path& worker_out,
                         const CheckArgs& args) {
  auto& c = kr.correctness;
  const std::string& tool = args.sanitize;
  std::string looked;
  const auto sanitizer = find_compute_sanitizer(&looked);
  if (!sanitizer) {
    c.warnings.push_back("sanitize " + tool +
                         ": SKIPPED: compute-sanitizer was not found (looked at " + looked +
                         "; KGATE_COMPUTE_SANITIZER may name it)");
    return;
  }
  std::vector<Case> all;
  if (package) {
    all = guard_and_extra_cases(package->kernel, package_options(args.options, *package));
  } else {
    // The kernel's own cases (its config's count and families too), less the huge one.
    const OpSignature& op = find_op(k.op);
    auto traits = traits_of(k);
    traits.huge = false;
    all = props::generate_cases(op, traits, resolve_settings(op, k.name, args.options).cases);
  }
  const auto subset = sanitize_subset(all, args.sanitize_cases);
  std::string said;
  int64_t with_errors = 0;
  for (size_t n = 0; n < subset.size(); ++n) {
    const Case& kc = subset[n];
    auto attempt = one_case_worker(child, worker_out / "sanitize", kc);
    attempt.wrapper = {*sanitizer, "--tool", tool, "--print-limit", "10", "--error-exitcode", "0"};
    attempt.env = {"PYTORCH_NO_CUDA_MEMORY_CACHING=1", "KGATE_UNDER_SANITIZER=1"};
    if (!args.quiet)
      std::fprintf(stderr, "kgate: %s: compute-sanitizer %s on case %zu/%zu %s\n", k.name.c_str(),
                   tool.c_str(), n + 1, subset.size(), kc.id().c_str());
    const auto w = run_worker(attempt, "", std::min(args.kernel_timeout_s, 900.0));
    const auto f = parse_sanitizer_output(w.output.text());
    if (!f.completed) {
      c.warnings.push_back(
          "sanitize " + tool + ": SKIPPED: compute-sanitizer did not finish case " + kc.id() +
          ": " + safe_log_text(w.failure.empty() ? f.reason : w.failure + "; " + f.reason));
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
    cr.rule = parse_reason(tool, "--sanitize");
    std::string first;
    for (const auto& l : f.first) first += (first.empty() ? "" : "; ") + l;
    cr.message = "compute-sanitizer " + tool + " found " + std::to_string(f.errors) +
                 " error(s) in this case: " + safe_log_text(first);
    cr.repro = repro_command(k, kc) + "  # under compute-sanitizer --tool " + tool;
    ++c.failed;
    if (c.failures.size() < 10) c.failures.push_back(cr);
    if (!c.minimal) c.minimal = cr;
    kr.outcome = Outcome::failed;
  }
  c.warnings.push_back("sanitize " + tool + ": " + std::to_string(subset.size()) +
                       " case(s) under compute-sanitizer, " + std::to_string(with_errors) +
                       " with errors (errors per case: " + said + ")");
}

/// Whether a GPU that just ran a kernel became unusable. Its worker's own words first (a lost
/// device, ECC, no device), then NVML by the GPU's UUID (from the worker's report), asked without a
/// CUDA context. KGATE_TEST_UNUSABLE_DEVICES=0,1 says so of those ordinals (for tests without such
/// a GPU).
struct DeviceHealth {
  std::string uuid;
  unsigned long long ecc_baseline = ~0ull;

  std::string trouble(int device, const KernelReport& kr) {
    if (uuid.empty()) {
      const auto at = kr.worker_device.find("GPU-");
      if (at != std::string::npos && kr.worker_device.size() >= at + 40)
        uuid = kr.worker_device.substr(at, 40);
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
      for (const char* sign :
           {"uncorrectable ECC", "ECC error", "GPU is lost", "fallen off the bus",
            "no CUDA-capable device", "busy or unavailable"})
        if (said.find(sign) != std::string::npos)
          return std::string("its worker said \"") + sign + "\"";
    }
    return cuda::nvml_device_trouble(uuid, &ecc_baseline);
  }
};

}  // namespace

namespace {

// The run's kernels, each in workers of its own, one GPU after another or several at once.
class WorkerDealer {
 public:
  explicit WorkerDealer(const WorkerRun& run)
      : args(run.args),
        plan(run.plan),
        t0(run.t0),
        run_comparisons(run.run_comparisons),
        report(run.report),
        write_reports(run.write_reports),
        out(run.args.out_dir),
        growth_left(growth_left_at_start(run.args.options)) {}

  // One kernel or package, in workers on `device` (nullopt: the GPU selected for this process).
  std::optional<KernelReport> check_isolated(size_t i, std::optional<int> device) {
    const double started =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const KernelInfo& k = plan.kernel_at(i);
    if (!args.quiet)
      std::fprintf(stderr, "[%zu/%zu] %s (%s, %s) in a worker process\n", i + 1, plan.total(),
                   k.name.c_str(), k.op.c_str(), backend_name(plan.backend));
    const fs::path worker_out = out / "workers" / k.name;
    WorkerInvocation child = WorkerInvocation::of_target(args.request, plan.backend, args.argv,
                                                         k.name, worker_out.string());
    child.task.run_comparisons = run_comparisons;
    child.task.growth_left_s = growth_share();
    child.task.device_share = share_path(device);
    child.device = device;
    // A fault kills its worker's CUDA context: the worker stops there, and a fresh one goes on
    // with the remaining cases (at most kMaxFaultRestarts times).
    std::optional<KernelReport> merged;
    std::string worker_device;  // as the worker named it (name, ordinal, UUID)
    double started_ahead_s = -1;
    std::string said_all;
    uint64_t printed = 0, dropped = 0;
    int64_t resume_at = 0, reference_copies_at = -1;
    for (int restarts = 0;; ++restarts) {
      WorkerInvocation attempt = child;
      attempt.task.resume_at = resume_at;
      attempt.task.resumed_after_failure =
          merged && (merged->outcome == Outcome::failed || merged->correctness.failed > 0);
      attempt.task.reference_copies_at = reference_copies_at;
      // A fresh worker takes the tile sizes the first observed (none: it does not probe again),
      // so that its case list is the first's.
      if (merged) {
        nlohmann::json observed = nlohmann::json::array();
        const auto& cov = merged->correctness.coverage;
        if (cov.is_object() && cov.contains("tile_sizes"))
          for (const auto& s : cov.at("tile_sizes"))
            if (s.value("origin", "") == "observed") observed.push_back(s);
        attempt.observed_sizes = observed.dump();
      }
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
        std::fprintf(stderr,
                     "kgate: %s printed %llu bytes; %llu of them are not shown (the report keeps "
                     "the first and last lines)\n",
                     k.name.c_str(), static_cast<unsigned long long>(w.output.total_bytes()),
                     static_cast<unsigned long long>(w.output.dropped_bytes()));
      said_all += said;
      if (restarts == 0) started_ahead_s = w.started_ahead_s;
      printed += w.output.total_bytes();
      dropped += w.output.dropped_bytes();
      if (!w.ok) {
        if (fold_failed_worker(k, w, said, restarts, merged, resume_at, reference_copies_at))
          continue;
        break;
      }
      worker_device = w.report.meta.device;
      adopt_worker_meta(w.report.meta);
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
            std::to_string(c.not_run) + " cases were not run: the kernel faulted " +
            std::to_string(c.faulted.size()) + " times and its op's reference " +
            std::to_string(c.reference_faulted.size()) + ", and kgate starts at most " +
            std::to_string(kMaxFaultRestarts) + " workers per kernel");
        // Cases never run leave the kernel unproven (after faults of the reference alone): never a
        // pass.
        if (merged->outcome == Outcome::passed) merged->outcome = Outcome::invalid;
        break;
      }
      resume_at = c.resume_at;
      reference_copies_at = c.reference_copies_at;
      if (!args.quiet)
        std::fprintf(stderr,
                     "kgate: %s%s faulted on case %s; going on with the %lld remaining cases in a "
                     "fresh worker%s\n",
                     reference_fault ? "the reference of " : "", k.name.c_str(),
                     (reference_fault ? c.reference_faulted : c.faulted).back().c_str(),
                     static_cast<long long>(c.not_run),
                     reference_copies_at >= 0
                         ? " (that case again, its reference on contiguous copies)"
                         : "");
    }
    if (merged) {
      if (!merged->correctness.faulted.empty() && args.options.shrink)
        shrink_fault_in_workers(*merged, k, child, worker_out, args);
      if (!args.sanitize.empty())
        sanitize_in_workers(*merged, k, plan.package_at(i), child, worker_out, args);
      merged->worker_output = said_all;  // each part made safe and bounded already
      merged->worker_output_bytes = printed;
      merged->worker_output_dropped_bytes = dropped;
      merged->worker_device =
          worker_device.empty() ? std::string(backend_name(plan.backend)) : worker_device;
      merged->worker_ordinal = device.value_or(-1);
      merged->worker_started_ahead_s = started_ahead_s;
      merged->worker_start_s = started;
      merged->worker_end_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      spend_growth(*merged);
    }
    return merged;
  }

  // The next kernels' workers load their libraries while these run: one waits ahead for each
  // kernel not yet started (`started` of them are), at most one per slot.
  void keep_ahead(size_t started, size_t slots) {
    keep_workers_ahead(std::min(slots, plan.total() - std::min(plan.total(), started)));
  }

  // The run's budget growth a kernel's worker may take: what is left, shared between the GPUs of
  // --devices that may each be timing a kernel at once (the run's total stays within the cap).
  double growth_share() {
    std::lock_guard<std::mutex> lock(growth_mutex);
    return growth_left / static_cast<double>(std::max<size_t>(1, args.devices.size()));
  }
  void spend_growth(const KernelReport& k) {
    std::lock_guard<std::mutex> lock(growth_mutex);
    growth_left = std::max(0.0, growth_left - budget_grown_s(k));
  }

  // --jobs: the lock the workers on `device` share, in a directory of its own that they may
  // write (empty: one worker at a time there).
  std::string share_path(std::optional<int> device) const {
    if (args.jobs <= 1) return {};
    return (out / "workers" / (".device-" + (device ? std::to_string(*device) : std::string("0"))) /
            "share")
        .string();
  }

  // The run on one GPU, or on each of --devices; with --jobs, that many workers at once on each.
  void deal() {
    if (args.devices.size() <= 1 && args.jobs <= 1) {
      const std::optional<int> device =
          args.devices.empty() ? std::nullopt : std::optional<int>(args.devices.front());
      for (size_t i = 0; i < plan.total(); ++i) {
        keep_ahead(i + 1, 1);
        if (auto kr = check_isolated(i, device)) report.kernels.push_back(std::move(*kr));
        write_reports();  // after every kernel: a crash later loses nothing already measured
      }
    } else {
      // One thread per worker slot (--jobs per GPU) takes the next kernel when its last one is
      // done: a GPU never runs more than --jobs at once, and never times two (their timing has it
      // alone). The report keeps the kernels' order, and is written after each one as before.
      std::vector<std::optional<KernelReport>> done(plan.total());
      std::atomic<size_t> next{0};
      std::mutex done_mutex;
      std::exception_ptr error;  // the first error of any thread: no more kernels are dealt
      std::set<int> retired;     // GPUs retired by any of their slots: the others stop too
      const auto publish = [&](size_t i, std::optional<KernelReport> kr) {
        std::lock_guard<std::mutex> lock(done_mutex);
        done[i] = std::move(kr);
        std::lock_guard<std::mutex> meta_lock(meta_mutex);
        report.kernels.clear();
        for (const auto& d : done)
          if (d) report.kernels.push_back(*d);
        write_reports();
      };
      const size_t slot_count =
          static_cast<size_t>(std::max(1, args.jobs)) * std::max<size_t>(1, args.devices.size());
      const auto serve = [&](std::optional<int> device) {
        try {
          DeviceHealth health;
          const auto is_retired = [&] {
            std::lock_guard<std::mutex> lock(done_mutex);
            return device && retired.count(*device) > 0;
          };
          // A GPU another slot retired takes no more kernels.
          for (size_t i; !is_retired() && (i = next++) < plan.total();) {
            keep_ahead(next.load(), slot_count);
            auto kr = check_isolated(i, device);
            // A GPU that became unusable (lost, uncorrected ECC errors, no device) is retired: the
            // kernel it was running loses its results, and the others go to the GPUs left.
            const std::string why = kr && device ? health.trouble(*device, *kr) : std::string();
            if (why.empty()) {
              publish(i, std::move(kr));
              continue;
            }
            const KernelInfo& k = plan.kernel_at(i);
            {
              std::lock_guard<std::mutex> lock(done_mutex);
              retired.insert(*device);
            }
            const std::string gpu = "GPU " + std::to_string(*device) +
                                    (health.uuid.empty() ? "" : " (" + health.uuid + ")");
            KernelReport lost = failed_kernel_report(
                k.name, k.op, backend_name(plan.backend), k.source,
                gpu + " became unusable while this kernel ran (" + why +
                    "): its results are not kept, and kgate deals no more kernels to that GPU",
                kr->seconds);
            lost.worker_device = kr->worker_device;
            lost.worker_ordinal = kr->worker_ordinal;
            lost.worker_start_s = kr->worker_start_s;
            lost.worker_end_s = kr->worker_end_s;
            if (!args.quiet)
              std::fprintf(stderr, "kgate: %s became unusable (%s): retired; %s is lost\n",
                           gpu.c_str(), why.c_str(), k.name.c_str());
            {
              std::lock_guard<std::mutex> meta_lock(meta_mutex);
              report.meta.config["retired_devices"].push_back(
                  {{"ordinal", *device}, {"uuid", health.uuid}, {"why", why}, {"kernel", k.name}});
            }
            publish(i, std::move(lost));
            return;
          }
        } catch (...) {
          std::lock_guard<std::mutex> lock(done_mutex);
          if (!error) error = std::current_exception();
          next = plan.total();
        }
      };
      // Each GPU's lock (--jobs) starts with its share of the run's budget growth.
      std::vector<std::optional<int>> gpus_used;
      if (args.devices.empty()) gpus_used.push_back(std::nullopt);
      for (int d : args.devices) gpus_used.push_back(d);
      if (args.jobs > 1)
        for (const auto& d : gpus_used) {
          fs::create_directories(fs::path(share_path(d)).parent_path());
          DeviceShare(share_path(d)).set_growth_left(growth_share());
        }
      std::vector<std::thread> slots;
      for (int j = 0; j < std::max(1, args.jobs); ++j)
        for (const auto& d : gpus_used) slots.emplace_back(serve, d);
      for (auto& t : slots) t.join();
      if (error) std::rethrow_exception(error);  // what was measured is in the report already
      // Every GPU retired before the work was done: the rest were never run.
      for (size_t i = 0; i < plan.total(); ++i)
        if (!done[i]) {
          const KernelInfo& k = plan.kernel_at(i);
          publish(i, failed_kernel_report(k.name, k.op, backend_name(plan.backend), k.source,
                                          "not run: every GPU of --devices became unusable (report "
                                          "meta.config.retired_devices)",
                                          0));
        }
    }
  }

 private:
  // A worker that crashed or hung. What it noted: the cases it finished keep their results, and
  // the case it was running is that case's failure. True when a fresh worker goes on after that
  // case.
  bool fold_failed_worker(const KernelInfo& k, const WorkerResult& w, const std::string& said,
                          int restarts, std::optional<KernelReport>& merged, int64_t& resume_at,
                          int64_t& reference_copies_at) {
    const fs::path worker_out = out / "workers" / k.name;
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
        merged = failed_kernel_report(k.name, k.op, backend_name(plan.backend), k.source, "", 0);
        merged->correctness.cases = progress.total;
      }
      auto& c = merged->correctness;
      const auto result_of = [&](const std::string& id, Outcome outcome, Reason rule,
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
        if (f.index < resume_at) return true;
        if (f.rule == Reason::reference_error) ++c.reference_errors;
        else if (f.outcome == "skipped") ++c.skipped;
        else if (f.outcome == "failed") {
          ++c.failed;
          CaseResult failed_case = result_of(f.id, Outcome::failed, f.rule, f.message);
          if (!smallest || failed_case.kcase.numel_hint() < smallest->kcase.numel_hint())
            smallest = failed_case;
          if (c.failures.size() < 10) c.failures.push_back(std::move(failed_case));
        } else {
          ++c.passed;
        }
      }
      merged->outcome = Outcome::failed;
      merged->seconds += w.seconds;
      if (merged->message.empty()) merged->message = failure;  // the first crash or hang
      c.not_run = 0;
      if (smallest &&
          (!c.minimal || c.minimal->rule == Reason::crash || c.minimal->rule == Reason::fault ||
           smallest->kcase.numel_hint() < c.minimal->kcase.numel_hint()))
        c.minimal = smallest;  // a wrong value on a smaller case than the crash (not shrunk: its
                               // worker died)
      if (progress.started && *progress.started >= resume_at) {
        CaseResult hit =
            result_of(progress.started_id, Outcome::failed, w.hung ? Reason::hang : Reason::crash,
                      "kernel '" + k.name + "': " + failure);
        // Outside the kernel's contract, a crash is that finding (a warning under
        // outside_contract: warn), as a fault the worker survives is.
        const OpSignature& op = find_op(k.op);
        const KernelSettings settings = resolve_settings(op, k.name, args.options);
        if (settings.gates.contract) {
          correctness::ContractTally tally;
          correctness::judge_against_contract(
              hit, *settings.gates.contract, op,
              settings.gates.outside_contract.value_or("") == "warn", tally, c.warnings);
        }
        if (hit.outcome == Outcome::passed) {
          ++c.passed;  // a finding outside the contract, a warning: the case does not fail
          if (c.failed == 0) merged->outcome = Outcome::passed;
        } else {
          ++c.failed;
          if (c.failures.size() < 10) c.failures.push_back(hit);
          c.faulted.push_back(progress.started_id);
          if (!c.minimal) c.minimal = hit;  // it ran and hung or crashed (a crash is shrunk below)
        }
        c.resume_at = *progress.started + 1;
        c.not_run = progress.total - *progress.started - 1;
      } else if (progress.done) {
        merged->message =
            failure + ", after the correctness cases (in the behaviour checks or the timing)";
      }
      // A hang would likely hang again, each time after the whole --kernel-timeout: stop there.
      if (!w.hung && c.not_run > 0 && restarts + 1 < kMaxFaultRestarts) {
        resume_at = c.resume_at;
        reference_copies_at = -1;  // (a crash: the case after it runs as it is)
        if (!args.quiet)
          std::fprintf(stderr,
                       "kgate: %s crashed its worker on case %s; going on with the %lld remaining "
                       "cases in a fresh worker\n",
                       k.name.c_str(), progress.started_id.c_str(),
                       static_cast<long long>(c.not_run));
        return true;
      }
      if (c.not_run > 0)
        c.warnings.push_back(std::to_string(c.not_run) + " cases were not run after case " +
                             progress.started_id +
                             (w.hung ? " hung (a hung kernel would hang again)"
                                     : " crashed its worker, the last of too many"));
      return false;
    }
    if (!merged) {
      merged = failed_kernel_report(k.name, k.op, backend_name(plan.backend), k.source, failure,
                                    w.seconds);
    } else {
      // The cases before this worker ran and keep their results; the rest did not run.
      merged->outcome = Outcome::failed;
      merged->correctness.warnings.push_back("the worker that went on from case " +
                                             std::to_string(resume_at + 1) + " failed: " + failure +
                                             "; the cases from there were not run");
    }
    return false;
  }

  // What a worker's report says of the machine, into the run's report (workers on several GPUs
  // report at once).
  void adopt_worker_meta(const RunMeta& meta) {
    {
      std::lock_guard<std::mutex> lock(meta_mutex);  // workers on several GPUs report at once
      // How the workers were confined: the first one's answer, unless a later one was not.
      if (const auto it = meta.config.find("sandbox"); it != meta.config.end() && it->is_string()) {
        const std::string said_sandbox = it->get<std::string>();
        const auto have = report.meta.config.find("sandbox");
        if (have == report.meta.config.end() || said_sandbox.rfind("none", 0) == 0) {
          if (said_sandbox.rfind("none", 0) == 0 && !args.quiet &&
              (have == report.meta.config.end() || *have != said_sandbox))
            std::fprintf(
                stderr,
                "kgate: warning: workers run unconfined (%s); --require-sandbox makes this "
                "an error\n",
                said_sandbox.c_str() + 6);
          report.meta.config["sandbox"] = said_sandbox;
        }
      }
      if (report.meta.device.empty()) {
        report.meta.device = meta.device;
        report.meta.driver = meta.driver;
        report.meta.cuda = meta.cuda;
        report.meta.torch = meta.torch;
      }
    }
  }

  const CheckArgs& args;
  const CheckPlan& plan;
  const std::chrono::steady_clock::time_point t0;
  const int64_t run_comparisons;
  RunReport& report;
  const std::function<void()>& write_reports;
  const fs::path out;
  std::mutex meta_mutex;  // report.meta, written from each GPU's thread
  double growth_left;     // the run's --budget-growth not yet taken by a kernel's comparisons
  std::mutex growth_mutex;
};

}  // namespace

void run_in_workers(const WorkerRun& run) {
  struct EndWorkersAhead {  // none is left waiting, however the run ends
    ~EndWorkersAhead() { end_workers_ahead(); }
  } end_workers_ahead;
  WorkerDealer(run).deal();
}

}  // namespace kgate::cli
