// The check pipeline.
#include "runtime/pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "core/captured.hpp"
#include "core/cost.hpp"
#include "core/format.hpp"
#include "core/rng.hpp"
#include "core/safetensors.hpp"
#include "gates/correctness/contract.hpp"
#include "gates/props/shrink.hpp"
#include "gates/props/tile_inference.hpp"
#include "gates/speed/decision.hpp"
#include "references/catalogue.hpp"
#include "runtime/behaviour_checks.hpp"
#include "runtime/case_plan.hpp"
#include "runtime/cuda/check.hpp"
#include "runtime/torch_op.hpp"

namespace kgate {

correctness::RuleKind default_rule(const OpSignature& op, DType dtype) {
  using correctness::RuleKind;
  const RuleKind own = correctness::parse_rule(op.default_rule);
  // An op that declares its conditioning is judged by it in every dtype: conditioned holds
  // eager_relative's allowance and adds the sum's own rounding scale.
  if (own == RuleKind::conditioned) return own;
  // f16 and bf16: torch's allclose rtol is about one ulp, so a kernel one or two ulp from eager
  // (and as close to the fp64 oracle) would fail or be FRAGILE. Such outputs are judged relative to
  // eager's own error, element by element, unless the op asks for ulp.
  if ((dtype == DType::f16 || dtype == DType::bf16) && own != RuleKind::ulp)
    return RuleKind::eager_relative;
  return own;
}

KernelSettings resolve_settings(const OpSignature& op, const std::string& kernel,
                                const CheckOptions& options) {
  KernelSettings k;
  k.gates = options.config.resolve(op.name, kernel, options.cli);
  const GateSettings& s = k.gates;
  k.rule = !options.rule.empty() ? options.rule : s.rule.value_or("");
  k.atol = options.atol;
  k.rtol = options.rtol;
  k.cases.seed = options.seed;
  k.cases.cases = s.cases.value_or(options.cases);
  k.cases.families = s.families.empty() ? options.families : s.families;
  k.timing = options.timing;
  if (s.delta) k.timing.interleave.delta = *s.delta;
  if (s.alpha) k.timing.interleave.alpha = *s.alpha;
  if (s.time_budget_s) k.timing.interleave.time_budget_s = *s.time_budget_s;
  if (s.contract) check_contract(*s.contract, op, "the contract of kernel '" + kernel + "'");
  return k;
}

correctness::RuleConfig rule_for(const OpSignature& op, DType dtype, const CheckOptions& options,
                                 const std::string& kernel) {
  return rule_for(op, dtype, resolve_settings(op, kernel, options));
}

correctness::RuleConfig rule_for(const OpSignature& op, DType dtype,
                                 const KernelSettings& settings) {
  const GateSettings& s = settings.gates;
  correctness::RuleConfig rule;
  rule.kind =
      !settings.rule.empty() ? correctness::parse_rule(settings.rule) : default_rule(op, dtype);
  rule.tolerance = op.tolerance_for(dtype);
  const bool own_tolerance =
      !s.atol && !s.rtol && !s.tolerance.count(dtype) && !settings.atol && !settings.rtol;
  if (own_tolerance) {
    rule.scale_symbol = op.tolerance_scale_symbol;
    rule.scale_power = op.tolerance_scale_power;
  }
  rule.terms_expr = op.conditioning_terms;
  rule.accumulate_in_case_dtype = op.accumulate_in_case_dtype;
  if (s.atol) rule.tolerance.atol = *s.atol;
  if (s.rtol) rule.tolerance.rtol = *s.rtol;
  if (auto it = s.tolerance.find(dtype); it != s.tolerance.end()) {
    if (it->second.first) rule.tolerance.atol = *it->second.first;
    if (it->second.second) rule.tolerance.rtol = *it->second.second;
  }
  if (settings.atol) rule.tolerance.atol = *settings.atol;
  if (settings.rtol) rule.tolerance.rtol = *settings.rtol;
  if (s.max_ulp) rule.max_ulp = *s.max_ulp;
  if (s.ref_ratio_k) rule.ratio_k = *s.ref_ratio_k;
  if (s.ref_ratio_floor) rule.ratio_floor = *s.ref_ratio_floor;
  return rule;
}

std::optional<double> workload_speedup(const std::vector<SpeedComparison>& speed,
                                       const std::vector<WeightedCase>& weighted,
                                       const std::string& baseline_name) {
  double base = 0, cand = 0;
  bool any = false;
  for (const auto& w : weighted) {
    if (w.calls <= 0) continue;
    for (const auto& s : speed) {
      if (s.baseline != baseline_name || !(s.kcase == w.kcase)) continue;
      if (s.decision == Outcome::skipped || s.decision == Outcome::invalid) continue;
      if (!(s.baseline_median_ns > 0) || !(s.candidate_median_ns > 0)) continue;
      base += static_cast<double>(w.calls) * s.baseline_median_ns;
      cand += static_cast<double>(w.calls) * s.candidate_median_ns;
      any = true;
      break;
    }
  }
  if (!any || !(cand > 0)) return std::nullopt;
  return base / cand;
}

namespace {

std::string fmt_g(double v) { return format_number(v); }

/// One kernel's check, as steps in the order they run: its settings; the correctness cases; the
/// behaviour checks and what the counts warn of; whether the base runs the same code (UNCHANGED);
/// the base on the head's cases; the failure shrunk, or the timing; the outcome's last rules.
class KernelCheck {
 public:
  KernelCheck(Runner& runner, const KernelInfo& kernel, const CheckOptions& options,
              const KernelInfo* baseline)
      : runner(runner),
        kernel(kernel),
        options(options),
        baseline(baseline),
        op(find_op(kernel.op)),
        settings(resolve_settings(op, kernel.name, options)),
        timing(timing_for(settings)),
        gen(settings.cases),
        probe([&] {
          const auto sharing = hold(false);
          return probe_tiles(runner, kernel, op, options, gen.seed);
        }()),
        traits(with_observed(traits_of(kernel), probe)),
        cases(cases_of(kernel, op, traits, gen, options)),
        step(std::max<int64_t>(1, static_cast<int64_t>(cases.size()) / 8)),
        resumed(options.worker.resumed_after_failure) {
    report.name = kernel.name;
    report.op = kernel.op;
    report.backend = backend_name(kernel.backend);
    report.source = kernel.source;
  }

  KernelReport run() {
    // A torch op that returns new tensors cannot be checked for unwritten elements or guard bands.
    if (const std::string* note = torch_op_memory_note(kernel.name); note && !note->empty())
      report.correctness.warnings.push_back(*note);
    report.correctness.cases = static_cast<int64_t>(cases.size());
    record_coverage();
    warn_without_huge_case();
    if (probe.fault) {
      // The kernel lost the CUDA context on the probe: its fault, and every case is a fresh
      // worker's (which takes the sizes observed, none, instead of probing again).
      report.correctness.failed = 1;
      report.correctness.failures.push_back(*probe.fault);
      report.correctness.faulted.push_back(probe.fault->kcase.id());
      report.correctness.resume_at = 0;
      report.correctness.not_run = static_cast<int64_t>(cases.size());
    } else {
      run_cases();
    }
    warn_of_case_counts();
    if (settings.gates.contract)
      report.correctness.contract = correctness::to_json(*settings.gates.contract, contract_tally);
    else if (const std::string hint = contract_hint.hint(kernel.name); !hint.empty())
      report.correctness.warnings.push_back(hint);
    // A worker that goes on after a kernel's fault judges its cases only: the kernel has failed
    // already. After the reference's faults alone, the behaviour checks and the timing follow here.
    if (options.behaviour_checks && report.correctness.failed == 0 && !runner.context_lost() &&
        !resumed) {
      const auto sharing = hold(false);
      const cost::Scope behaviour("behaviour");
      const Whole whole(*this, "(behaviour checks)");
      run_behaviour_checks(runner, kernel, op, judged, settings, options, report);
    }
    if (options.null_calibration_cases > 0 && !runner.context_lost() && !resumed) {
      const auto sharing = hold(false);
      const cost::Scope nulls("behaviour");
      const Whole whole(*this, "(null calibration)");
      run_null_calibration(runner, kernel, op, judged, settings, options, report);
    }
    warn_of_margin_and_guard();

    // The cases timed (here: the UNCHANGED decision records their launches).
    timed = options.timed_cases;
    if (timed.empty() && options.speed)
      for (auto& c : speed_cases(op, kernel, options.seed, options.speed_cases))
        timed.push_back({std::move(c), 0});
    {
      const cost::Scope base("base");
      {
        const auto sharing = hold(false);
        decide_unchanged();
      }
      if (baseline && !unchanged) check_baseline_cases();  // each case held as the head's
    }

    if (report.correctness.failed > 0) {
      report.outcome = Outcome::failed;
      const auto sharing = hold(false);
      const cost::Scope shrinking("shrink");
      shrink_failure();
    } else if (resumed || runner.context_lost()) {
      // No timing: the faults before this worker failed the kernel, or the reference's fault left
      // this worker's context unusable (the next worker times it).
    } else if (options.speed && !kernel.timed) {
      report.correctness.warnings.push_back("'" + kernel.name + "' " + kTwinNotTimed);
    } else if (options.speed && unchanged) {
      // Not timed, not gated: the base runs byte-identical code.
      SpeedComparison s;
      s.baseline = baseline->name;
      s.decision = Outcome::unchanged;
      s.gates = false;
      s.note = "not timed: '" + kernel.name + "' runs the same code as its base '" +
               baseline->name + "' (digest " + kernel.code_digest.substr(0, 16) +
               (launches_note.empty() ? "" : "; " + launches_note) + ")";
      report.speed.push_back(std::move(s));
    } else if (options.speed) {
      // With --jobs: alone on the device, and the run's growth left on it as the last timing
      // there left it.
      const auto alone = hold(true);
      if (options.device_share) growth_left = options.device_share->growth_left(growth_left);
      const cost::Scope timing_scope("timing");
      time_kernel();
      if (options.device_share) options.device_share->set_growth_left(std::max(0.0, growth_left));
    }
    finish();
    return std::move(report);
  }

 private:
  void say(const std::string& line) const {
    if (options.progress) options.progress(line);
  }

  // kgate check --jobs: the device for one piece of work, shared with the other workers' cases or
  // alone (the wait is a phase of --cost of its own). Nothing without --jobs.
  // The waits are kept (waited_s): the correctness phase's seconds leave them out.
  std::optional<DeviceShare::Hold> hold(bool alone) {
    if (!options.device_share) return std::nullopt;
    const cost::Scope waiting("wait");
    auto h = alone ? options.device_share->alone() : options.device_share->shared();
    waited_s += h.waited_s();
    return h;
  }

  // --cost: the wall seconds of a part of the check whose cases run through the phases (a case
  // family's correctness cases, the behaviour checks, the null calibration), counted whole in
  // report.cost_family_s; nothing when --cost is off. (Each phase waited for the device.)
  class Whole {
   public:
    Whole(KernelCheck& check, std::string part, bool one_case = false)
        : check_(check), part_(std::move(part)), one_case_(one_case) {}
    ~Whole() {
      if (!cost::enabled()) return;
      auto& [seconds, count] = check_.report.cost_family_s[part_.empty() ? "other" : part_];
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
      if (one_case_) ++count;
    }
    Whole(const Whole&) = delete;
    Whole& operator=(const Whole&) = delete;

   private:
    KernelCheck& check_;
    std::string part_;
    bool one_case_;
    std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  };

  // Case `c` on `k`, the device held for it: a huge case alone (its gigabytes), giving its cached
  // memory back after; any other shared. `on_copies`: the references run on contiguous copies.
  CaseResult check_held(const KernelInfo& k, const Case& c, const KernelSettings& s,
                        bool on_copies = false) {
    const bool huge = props::is_huge(op, c);
    const auto sharing = hold(huge);
    runner.set_references_on_copies(on_copies);
    const Whole whole(*this, &k == &kernel ? c.family : "(base's cases)", true);
    auto r = runner.check_case(k, c, rule_for(op, c.dtype, s));
    runner.set_references_on_copies(false);
    if (huge && sharing) runner.release_cached_memory();
    return r;
  }

  // The settings' timing (resolve_settings), with the block count the budget cannot cut below.
  TimingOptions timing_for(const KernelSettings& s) const {
    TimingOptions t = s.timing;
    // Fewer blocks than this can never decide, however large the slowdown: the budget cannot stop
    // a comparison before them (unless they take 10x the budget; the note then says what would do).
    const int64_t own =
        (options.timed_cases.empty() ? options.speed_cases
                                     : static_cast<int64_t>(options.timed_cases.size())) *
        (baseline ? 2 : 1);
    t.interleave.min_blocks = speed::min_blocks_to_decide(
        t.interleave.alpha, t.interleave.max_stages, std::max(own, options.worker.run_comparisons));
    return t;
  }

  static props::KernelTraits with_observed(props::KernelTraits t, const TileProbe& p) {
    t.found_sizes.insert(t.found_sizes.end(), p.sizes.begin(), p.sizes.end());
    return t;
  }

  // Which ragged edges the cases reached, and a warning naming those the budget left out.
  void record_coverage() {
    if (!options.only_cases.empty()) return;  // a replay or a shrink: not the kernel's case list
    const props::EdgeCoverage cov = props::edge_coverage(op, traits, gen.seed, cases);
    if (cov.symbol.empty()) return;
    report.correctness.coverage = coverage_json(cov, traits, probe);
    // (Families asked for without ragged: their edges were not what this run was for.)
    const bool ragged = gen.families.empty() || std::find(gen.families.begin(), gen.families.end(),
                                                          "ragged") != gen.families.end();
    if (cov.left_out.empty() || !ragged) return;
    std::string list;
    for (size_t i = 0; i < cov.left_out.size() && i < 8; ++i)
      list += (i ? ", " : "") + cov.symbol + "=" + std::to_string(cov.left_out[i].size) + " (" +
              cov.left_out[i].detail + ", " + cov.left_out[i].origin + ")";
    if (cov.left_out.size() > 8)
      list += ", and " + std::to_string(cov.left_out.size() - 8) + " more";
    report.correctness.warnings.push_back(std::to_string(cov.left_out.size()) + " edge(s) of " +
                                          cov.symbol + " did not fit the budget of " +
                                          std::to_string(gen.cases) + " cases: " + list +
                                          "; more --cases (or cases: in the config) reach them");
  }

  void warn_without_huge_case() {
    if (!traits.huge || !options.only_cases.empty()) return;
    if (!gen.families.empty() &&
        std::find(gen.families.begin(), gen.families.end(), "huge") == gen.families.end())
      return;
    std::string why;
    if (!props::huge_case(op, traits, gen.seed, &why))
      report.correctness.warnings.push_back(
          "no huge case, so 32-bit index arithmetic is not tested: " + why);
  }

  // The correctness cases from resume_at on, each judged and counted, until the list ends or the
  // CUDA context is lost.
  void run_cases() {
    const size_t first_case = static_cast<size_t>(
        std::clamp<int64_t>(options.worker.resume_at, 0, static_cast<int64_t>(cases.size())));
    for (size_t i = first_case; i < cases.size(); ++i) {
      if (!run_case(i)) break;
      if ((static_cast<int64_t>(i) + 1) % step == 0 || i + 1 == cases.size())
        say(kernel.name + ": correctness " + std::to_string(i + 1) + "/" +
            std::to_string(cases.size()) + " cases, " + std::to_string(report.correctness.failed) +
            " failed");
    }
    // The end of the case list: a crash after this line is not a case's (behaviour checks, timing).
    if (options.on_case && report.correctness.not_run == 0)
      options.on_case(cases.size(), cases.size(), Case{}, nullptr);
  }

  // Case i, judged and counted; false when the CUDA context was lost on it (nothing more runs
  // here).
  bool run_case(size_t i) {
    const auto& c = cases[i];
    if (options.on_case) options.on_case(i, cases.size(), c, nullptr);
    const bool copies = static_cast<int64_t>(i) == options.worker.reference_copies_at;
    auto r = check_held(kernel, c, settings, copies);
    if (settings.gates.contract)
      correctness::judge_against_contract(r, *settings.gates.contract, op,
                                          settings.gates.outside_contract.value_or("") == "warn",
                                          contract_tally, report.correctness.warnings);
    else if (is_torch_op(kernel)) contract_hint.add(c, r);
    // The reference faulted on a view: a fresh worker runs this case again with the reference on
    // contiguous copies (once; a fault there is final), so it is counted there. (Only a worker's
    // parent starts a fresh one: with --no-isolate the fault is final here.)
    const bool retry_on_copies = options.worker.in_worker && runner.context_lost() &&
                                 r.rule == Reason::reference_error && !copies &&
                                 c.layout != Layout::contiguous;
    if (options.on_case) options.on_case(i, cases.size(), c, &r);
    if (r.fallback) ++report.correctness.fallback;
    if (r.message.find("ran on contiguous copies") != std::string::npos) {
      std::string dims;
      for (const auto& [name, value] : c.dims)
        dims += (dims.empty() ? "" : ",") + name + "=" + std::to_string(value);
      reference_needed_copies.push_back(std::string(layout_name(c.layout)) + " " +
                                        dtype_name(c.dtype) + " " + dims);
    }
    // (Not a case whose reference ran on copies: the behaviour checks would run it on its view.)
    // (Nor one outside the kernel's contract: the behaviour checks ask for an answer there.)
    if (r.rule != Reason::reference_error && r.outcome != Outcome::skipped && !copies &&
        r.outside_contract.empty())
      judged.push_back(c);
    if (c.values == Values::captured) report.correctness.captured.push_back(r);
    if (r.outcome == Outcome::skipped) {
      // Not run here (a huge case without the device memory for it): never a pass, and said.
      ++report.correctness.skipped;
      report.correctness.warnings.push_back("case " + c.id() + " (" + c.family + ") " + r.message);
    } else if (r.rule == Reason::reference_error) {
      // The op's reference failed: the case judges nothing, and the kernel is not blamed.
      if (!retry_on_copies && report.correctness.reference_errors++ == 0)
        first_reference_error = c.id() + ": " + r.message;
    } else if (r.outcome == Outcome::failed) {
      ++report.correctness.failed;
      // A fault is kept past the cap: it ends this worker, and its message names the CUDA error.
      if (report.correctness.failures.size() < options.max_failures_kept || r.rule == Reason::fault)
        report.correctness.failures.push_back(r);
    } else {
      ++report.correctness.passed;
      if (std::isfinite(r.margin) && r.margin > report.correctness.worst_margin && !r.fallback) {
        report.correctness.worst_margin = r.margin;
        closest_repro = r.repro;
      }
    }
    if (!runner.context_lost()) return true;
    // Nothing more runs in this CUDA context: stop, and leave the rest unrun (never failed). A
    // worker's parent goes on at resume_at in a fresh process.
    const bool reference = r.rule == Reason::reference_error;
    (reference ? report.correctness.reference_faulted : report.correctness.faulted)
        .push_back(c.id());
    report.correctness.resume_at = static_cast<int64_t>(i) + (retry_on_copies ? 0 : 1);
    report.correctness.not_run = static_cast<int64_t>(cases.size()) - report.correctness.resume_at;
    report.correctness.reference_copies_at = retry_on_copies ? static_cast<int64_t>(i) : -1;
    say(kernel.name + ": case " + c.id() +
        (reference ? ": the op's reference faulted" : " faulted") + "; " +
        std::to_string(report.correctness.not_run) + " cases left for a fresh process" +
        (retry_on_copies ? " (this one again, the reference on contiguous copies)" : ""));
    return false;
  }

  // What the case loop's counts say: cases not run, references run on copies or failing.
  void warn_of_case_counts() {
    // (Outside a worker no case is retried: the lost case is the one before resume_at.)
    if (report.correctness.not_run > 0 && !options.worker.in_worker)
      report.correctness.warnings.push_back(
          std::to_string(report.correctness.not_run) + " of " + std::to_string(cases.size()) +
          " cases were not run: the CUDA context was lost when case " +
          cases[static_cast<size_t>(report.correctness.resume_at) - 1].id() +
          " faulted (`kgate check` runs each kernel in worker processes and goes on in a fresh "
          "one)");
    if (!reference_needed_copies.empty()) {
      std::string list;
      for (size_t i = 0; i < reference_needed_copies.size() && i < 5; ++i)
        list += (i ? "; " : "") + reference_needed_copies[i];
      if (reference_needed_copies.size() > 5)
        list += "; and " + std::to_string(reference_needed_copies.size() - 5) + " more";
      report.correctness.warnings.push_back(
          "the op's reference failed on " + std::to_string(reference_needed_copies.size()) +
          " case(s) of views and was judged on contiguous copies" +
          (kernel.accepts
               ? " (outside the guard of '" + kernel.name +
                     "' it is the fallback: deployed code that falls back fails on these)"
               : std::string()) +
          ": " + list);
    }
    if (report.correctness.reference_errors > 0)
      report.correctness.warnings.push_back(
          std::to_string(report.correctness.reference_errors) + " of " +
          std::to_string(cases.size()) +
          " cases could not be judged: the op's reference failed on them (fix the op file " +
          op.origin + "); first: " + first_reference_error);
  }

  // FRAGILE, and a guard whose fallback side (or kernel side) no case reached.
  void warn_of_margin_and_guard() {
    const double fragile_margin = settings.gates.fragile_margin.value_or(kDefaultFragileMargin);
    if (report.correctness.failed == 0 && report.correctness.worst_margin > fragile_margin)
      report.correctness.warnings.push_back(
          "FRAGILE: passes with a worst margin of " + fmt_g(report.correctness.worst_margin) +
          " (observed / allowed error), above the fragility threshold " +
          format_exact(fragile_margin) + "; closest case: " + closest_repro + "; `kgate sweep " +
          (kernel.package ? "'" + kernel.source + "'" : "--kernel " + kernel.name) +
          "` shows the margin per dtype and the tightest tolerance that passes");
    // A resumed worker sees only the cases after a fault: its counts say nothing of the whole run.
    if (kernel.accepts && !cases.empty() && !runner.context_lost() &&
        options.worker.resume_at == 0) {
      // A guard whose boundary cases all fell inside it (guard_inside, no guard_outside) admits
      // every case of the op: it has no fallback side to test.
      const auto has_family = [&](const char* f) {
        return std::any_of(cases.begin(), cases.end(),
                           [&](const Case& c) { return c.family == f; });
      };
      const bool admits_everything = has_family("guard_inside") && !has_family("guard_outside");
      if (report.correctness.fallback == 0 && !admits_everything)
        report.correctness.warnings.push_back("no case fell outside the guard of '" + kernel.name +
                                              "': the fallback side was not tested");
      else if (report.correctness.fallback == report.correctness.cases) {
        never_ran = true;
        report.correctness.warnings.push_back("every case fell outside the guard of '" +
                                              kernel.name + "': the kernel itself never ran");
      }
    }
  }

  // A base version running the head's code: nothing to compare (UNCHANGED). The module's code must
  // be the same (its digest), and on the GPU what it launches too: on each timed case, the kernels'
  // SASS, grid, block, shared memory, attributes and argument bytes (code it reaches outside its
  // module, a CUBIN it loads, a launch configuration from elsewhere).
  void decide_unchanged() {
    unchanged = baseline && options.baseline_is_base && same_code(kernel, *baseline);
    if (unchanged && options.speed && kernel.timed && runner.backend() == Backend::cuda &&
        report.correctness.failed == 0 && !runner.context_lost() && !resumed)
      compare_launches();
    // Equal code digests that the launches overruled: the runner, which calls equal digests
    // UNCHANGED, gets a base without one, and times it.
    if (baseline && !unchanged && options.baseline_is_base && same_code(kernel, *baseline)) {
      relaunched = *baseline;
      relaunched->code_digest.clear();
      baseline = &*relaunched;
    }
  }

  // The head's and the base's launches on each timed case: the same, or UNCHANGED is overruled.
  void compare_launches() {
    nlohmann::json record = {{"cases", 0}};
    // What was compared, for the report: the first lines of a record.
    const auto lines = [](const cuda::LaunchRecord& r) {
      nlohmann::json out = nlohmann::json::array();
      for (size_t i = 0; i < r.launches.size() && i < 8; ++i)
        out.push_back(r.launches[i].substr(0, 400));
      return out;
    };
    for (const auto& w : timed) {
      const cuda::LaunchRecord head = runner.record_launches(kernel, w.kcase);
      const cuda::LaunchRecord base = runner.record_launches(*baseline, w.kcase);
      std::string difference;
      if (cuda::same_launches(head, base, &difference)) {
        record["cases"] = record["cases"].get<int64_t>() + 1;
        record["launches"] = head.launches.size();
        if (!record.contains("first"))
          record["first"] = {{"case", w.kcase.id()}, {"lines", lines(head)}};
        continue;
      }
      unchanged = false;
      if (!head.known || !base.known) {
        // What cannot be seen cannot be called the same: timed (the safe side).
        launches_note = "its module's code is the base's, but its launches on " + w.kcase.id() +
                        " could not be compared (" + difference + "): timed";
        record["not_compared"] = difference;
        break;
      }
      launches_note = "its module's code is the base's, but on " + w.kcase.id() +
                      " it launches differently: " + difference;
      record["different"] = {{"case", w.kcase.id()},
                             {"difference", difference},
                             {"head", lines(head)},
                             {"base", lines(base)}};
      break;
    }
    if (launches_note.empty() && !timed.empty())
      launches_note =
          "and the same launches on its " + std::to_string(timed.size()) + " timed case(s)";
    report.base["launches"] = std::move(record);
    if (!unchanged) say(kernel.name + ": " + launches_note);
  }

  // The same cases on the baseline (informational: the baseline is not what is being deployed).
  void check_baseline_cases() {
    report.baseline = baseline->name;
    report.baseline_source = baseline->source;
    CorrectnessReport b;
    b.cases = static_cast<int64_t>(cases.size());
    // The base's settings, resolved once (it is judged as its own kernel name would be).
    const KernelSettings base_settings = resolve_settings(op, baseline->name, options);
    for (size_t i = 0; i < cases.size() && !runner.context_lost(); ++i) {
      auto r = check_held(*baseline, cases[i], base_settings);
      if (r.fallback) ++b.fallback;
      if (r.outcome == Outcome::failed) {
        ++b.failed;
        if (b.failures.size() < options.max_failures_kept) b.failures.push_back(r);
      } else {
        ++b.passed;
        if (std::isfinite(r.margin)) b.worst_margin = std::max(b.worst_margin, r.margin);
      }
      if ((static_cast<int64_t>(i) + 1) % step == 0 || i + 1 == cases.size())
        say(kernel.name + ": baseline " + baseline->name + " correctness " + std::to_string(i + 1) +
            "/" + std::to_string(cases.size()) + " cases, " + std::to_string(b.failed) + " failed");
    }
    if (b.failed > 0)
      report.correctness.warnings.push_back(
          "baseline '" + baseline->name + "' fails " + std::to_string(b.failed) + " of " +
          std::to_string(b.cases) + " cases (first: " + b.failures.front().kcase.id() + ": " +
          b.failures.front().message + ")");
    report.baseline_correctness = std::move(b);
  }

  // The smallest failing case kept, shrunk to a minimal one (fewer steps from a small one).
  void shrink_failure() {
    const auto& failures = report.correctness.failures;
    const CaseResult* first = &failures.front();
    for (const auto& f : failures)
      if (f.kcase.numel_hint() < first->kcase.numel_hint()) first = &f;
    // A stale or determinism failure needs its behaviour check to show: shrinking it with plain
    // check_case runs would end on a passing case (an empty message, a repro that passes).
    const bool behaviour = first->rule == Reason::stale || first->rule == Reason::determinism ||
                           first->rule == Reason::written_before;
    if (!options.shrink || first->rule == Reason::fault || behaviour || runner.context_lost()) {
      report.correctness.minimal = *first;
      return;
    }
    say(kernel.name + ": shrinking the failing case " + first->kcase.id());
    const auto shrunk =
        props::shrink(first->kcase, op, props::all_tile_sizes(traits), [&](const Case& c) {
          return runner.check_case(kernel, c, rule_for(op, c.dtype, settings)).outcome ==
                 Outcome::failed;
        });
    auto minimal =
        runner.check_case(kernel, shrunk.minimal, rule_for(op, shrunk.minimal.dtype, settings));
    minimal.kcase.family = first->kcase.family;
    minimal.message += correctness::shrunk_from_note(*first, minimal);
    report.correctness.minimal = minimal;
    say(kernel.name + ": minimal failing case " + minimal.kcase.id() + " (" +
        std::to_string(shrunk.steps) + " reductions, " + std::to_string(shrunk.attempts) +
        " attempts)");
  }

  // One timed comparison. Checked timing: a timed launch whose output is wrong fails the kernel's
  // correctness, and ends its timing (what it measured is not a correct kernel's time).
  void timed_comparison(const KernelInfo* against, const Case& c) {
    const auto start = std::chrono::steady_clock::now();
    const auto rule = rule_for(op, c.dtype, settings);
    TimingOptions t = timing;
    t.interleave.growth_s = std::max(0.0, growth_left);
    SpeedComparison s = runner.time_case(kernel, against, c, t, options.seed, &rule);
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    growth_left -= s.budget_grown_s;
    if (s.wrong_while_timed) {
      wrong_while_timed = true;
      say(kernel.name + ": " + s.wrong_while_timed->message);
      ++report.correctness.cases;
      ++report.correctness.failed;
      report.correctness.failures.push_back(*s.wrong_while_timed);
      report.correctness.minimal = *s.wrong_while_timed;
      report.outcome = Outcome::failed;
    }
    report.speed.push_back(std::move(s));
  }

  // Each timed case against eager and against the baseline; the workload's speedups; the outcome.
  void time_kernel() {
    report.correctness.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() - waited_s;
    for (size_t i = 0; i < timed.size() && !wrong_while_timed; ++i) {
      const Case& c = timed[i].kcase;
      say(kernel.name + ": timing " + std::to_string(i + 1) + "/" + std::to_string(timed.size()) +
          " " + c.id() + " vs eager");
      timed_comparison(nullptr, c);
      // gate_against_eager: false: a kernel with a base to gate against reports eager,
      // informational.
      if (baseline && options.baseline_is_base && settings.gates.gate_against_eager == false)
        report.speed.back().gates = false;
      if (baseline && !wrong_while_timed && options.baseline_is_base &&
          report.baseline_correctness && report.baseline_correctness->failed > 0) {
        // A base that is wrong on the head's cases has no speed worth comparing with.
        const auto& bf = report.baseline_correctness->failures.front();
        SpeedComparison s;
        s.baseline = baseline->name;
        s.kcase = c;
        s.decision = Outcome::invalid;
        s.note = "not timed: base '" + baseline->name + "' fails " +
                 std::to_string(report.baseline_correctness->failed) +
                 " of the head's correctness cases (first: " + bf.kcase.id() + ": " + bf.message +
                 ")";
        report.speed.push_back(std::move(s));
      } else if (baseline && !wrong_while_timed) {
        say(kernel.name + ": timing " + std::to_string(i + 1) + "/" + std::to_string(timed.size()) +
            " " + c.id() + " vs " + baseline->name);
        timed_comparison(baseline, c);
      }
    }
    for (const auto& w : timed)
      if (w.calls > 0) {
        ++report.workload_variants;
        report.workload_calls += w.calls;
      }
    if (report.workload_variants > 0) {
      report.workload_speedup_vs_eager = workload_speedup(report.speed, timed, "eager");
      if (baseline)
        report.workload_speedup_vs_baseline = workload_speedup(report.speed, timed, baseline->name);
    }
    for (const auto& s : report.speed) {
      // An undecided comparison whose estimate is past delta is never a quiet pass.
      if (s.decision == Outcome::inconclusive && s.ratio > 1 + s.delta)
        report.correctness.warnings.push_back(
            "speed vs " + s.baseline + " on " + s.kcase.id() + " is undecided, but its estimate x" +
            fmt_g(s.ratio) + " is past delta " + format_percent(s.delta) + " (" +
            std::to_string(s.blocks) + " blocks" + (s.note.empty() ? "" : "; " + s.note) +
            "); --inconclusive-fails makes this exit 3");
      if (report.outcome == Outcome::failed || !s.gates)
        continue;  // (informational entries decide nothing)
      if (s.decision == Outcome::regressed) report.outcome = Outcome::regressed;
      else if (s.decision == Outcome::invalid && report.outcome == Outcome::passed)
        report.outcome = Outcome::invalid;
    }
  }

  // The outcome's last rules, the launches each case ran (packages), the kernel's notes, the times.
  void finish() {
    // Cases the reference could not judge leave the kernel unproven: never a pass.
    if (report.correctness.reference_errors > 0 && report.outcome == Outcome::passed)
      report.outcome = Outcome::invalid;
    // No case ran the kernel: nothing was shown, so nothing passed. UNCHECKED (exit 3), but for
    // the huge family alone on the cpu backend, which leaves it out by design (skipped, exit 0).
    if (report.correctness.cases == 0 && report.outcome == Outcome::passed &&
        options.worker.resume_at == 0) {
      const bool huge_on_cpu =
          !traits.huge && gen.families.size() == 1 && gen.families[0] == "huge";
      report.outcome = huge_on_cpu ? Outcome::skipped : Outcome::unchecked;
      report.message = "no correctness case applies to '" + kernel.name + "'" +
                       (gen.families.empty() ? std::string() : " in the families asked for") +
                       (huge_on_cpu ? " (the huge family runs on the cuda backend only)" : "") +
                       ": not checked";
      report.correctness.warnings.push_back(report.message);
    } else if (never_ran && report.outcome == Outcome::passed) {
      report.outcome = Outcome::unchecked;
      report.message = "every case fell outside the guard of '" + kernel.name +
                       "': the kernel itself never ran (widen its guard, or the op's domain)";
    }
    // Packages: the device's properties and the launches each case ran under them (a case id names
    // a case; which launch it ran can depend on the device), and what kgate did that the kernel's
    // own host code must also do.
    if (kernel.case_launches) {
      try {
        nlohmann::json by_case = nlohmann::json::object();
        for (const auto& c : cases) by_case[c.id()] = kernel.case_launches(c);
        for (const auto& w : timed) by_case[w.kcase.id()] = kernel.case_launches(w.kcase);
        // A launch no correctness case ran: its code was checked only while timed, or not at all.
        for (const auto& field : kernel.launch_fields) {
          const auto runs = [&](const Case& c) {
            for (const auto& line : by_case[c.id()])
              if (line.get<std::string>().rfind(field + " ", 0) == 0) return true;
            return false;
          };
          if (std::any_of(cases.begin(), cases.end(), runs)) continue;
          const auto timed_runs = std::count_if(timed.begin(), timed.end(),
                                                [&](const auto& w) { return runs(w.kcase); });
          report.correctness.warnings.push_back(
              field + " runs on none of the " + std::to_string(cases.size()) +
              " correctness cases" +
              (timed_runs > 0 ? ", only on " + std::to_string(timed_runs) +
                                    " timed case(s): its values are checked only while timed"
                              : ": its code is not checked") +
              "; give it a case that meets its condition (more --cases, a guard that makes the "
              "cases meet it, or captured inputs)");
        }
        report.launches = {
            {"device",
             kernel.device_props ? nlohmann::json::parse(kernel.device_props()) : nlohmann::json()},
            {"cases", std::move(by_case)}};
      } catch (const std::exception& e) {
        report.correctness.warnings.push_back("the launches of each case were not recorded: " +
                                              std::string(e.what()));
      }
    }
    if (kernel.notes)
      for (const auto& n : kernel.notes()) report.correctness.warnings.push_back(n);
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (report.correctness.seconds == 0)
      report.correctness.seconds = report.seconds - waited_s;  // no speed phase
  }

  const std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  Runner& runner;
  const KernelInfo& kernel;
  const CheckOptions& options;
  const KernelInfo* baseline;  // relaunched's, where equal digests were overruled by the launches
  const OpSignature& op;
  const KernelSettings settings;
  const TimingOptions timing;
  const props::GeneratorOptions& gen;  // settings.cases
  const TileProbe probe;               // before traits: they take the sizes it observed
  const props::KernelTraits traits;
  const std::vector<Case> cases;
  const int64_t step;  // progress every step cases
  const bool resumed;  // a worker going on after the kernel's fault
  // Seconds of budget growth the run has left for this kernel's comparisons (--budget-growth, less
  // what the kernels before took; the parent tells a worker).
  double growth_left = growth_left_at_start(options);
  KernelReport report;
  correctness::ContractTally contract_tally;  // the cases against the kernel's contract
  correctness::ContractHint contract_hint;    // a torch op without one: what it would state
  std::string closest_repro;                  // the passing case nearest its tolerance
  std::string first_reference_error;
  // Cases whose reference failed on their view and ran on contiguous copies: "layout dtype dims".
  std::vector<std::string> reference_needed_copies;
  // The cases this process ran and judged: the behaviour checks and the null kernels take theirs
  // from these (a case whose reference failed, or faulted in an earlier worker, judges nothing).
  std::vector<Case> judged;
  std::vector<WeightedCase> timed;
  bool unchanged = false;
  bool never_ran = false;  // every case fell outside the kernel's guard (warn_of_margin_and_guard)
  std::string launches_note;
  std::optional<KernelInfo> relaunched;
  bool wrong_while_timed = false;
  double waited_s = 0;  // seconds waiting for the device (hold: kgate check --jobs)
};

}  // namespace

KernelReport check_kernel(Runner& runner, const KernelInfo& kernel, const CheckOptions& options,
                          const KernelInfo* baseline) {
  if (!cost::enabled()) return KernelCheck(runner, kernel, options, baseline).run();
  // What the process spent before this kernel's first phase (the first kernel of a process: its
  // start, LibTorch, the plan), and the phases since the last kernel (compiling its package).
  static bool first = true;
  std::map<std::string, double> spent = cost::take();
  if (first) {
    double before = 0;
    for (const auto& [phase, s] : spent) before += s;
    spent["startup"] += std::max(0.0, cost::process_age_s() - before);
    first = false;
  }
  KernelReport r;
  {
    const cost::Scope rest("other");  // what no inner phase claims
    r = KernelCheck(runner, kernel, options, baseline).run();
  }
  for (const auto& [phase, s] : cost::take()) spent[phase] += s;
  r.cost_s = std::move(spent);
  return r;
}

double growth_left_at_start(const CheckOptions& options) {
  return options.worker.growth_left_s >= 0 ? options.worker.growth_left_s
                                           : options.timing.interleave.growth_s;
}

double budget_grown_s(const KernelReport& k) {
  double grown = 0;
  for (const auto& s : k.speed) grown += s.budget_grown_s;
  return grown;
}

double growth_left_after(const CheckOptions& options, const KernelReport& k) {
  return std::max(0.0, growth_left_at_start(options) - budget_grown_s(k));
}

}  // namespace kgate
