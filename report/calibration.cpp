// kgate calibrate's writer (report/calibration.hpp): calibrate.json from a CalibrationReport.
#include "report/calibration.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

#include "core/format.hpp"
#include "core/outcome.hpp"
#include "report/text.hpp"

namespace kgate {
using nlohmann::ordered_json;

namespace {

/// A JSON number; null for a non-finite value (an unbounded limit, nothing measured).
ordered_json json_number(double v) { return std::isfinite(v) ? ordered_json(v) : ordered_json(); }

speed::AaComparison aa_of(const AaRun& run) {
  speed::AaComparison c;
  const SpeedComparison& cmp = run.comparison;
  switch (cmp.decision) {
    case Outcome::regressed:
      c.decision = speed::Decision::regression;
      break;
    case Outcome::passed:
      c.decision = speed::Decision::pass;
      break;
    case Outcome::inconclusive:
      c.decision = speed::Decision::inconclusive;
      break;
    default:
      c.invalid = true;
      break;
  }
  if (!(cmp.ratio > 0) || !(cmp.ratio_upper > 0)) c.invalid = true;
  if (!c.invalid) {
    c.log_ratio = std::log(cmp.ratio);
    c.log_upper = std::log(cmp.ratio_upper);
  }
  c.cv = run.noise.cv;
  return c;
}

ordered_json summary_json(const speed::AaSummary& s, const std::vector<const AaRun*>& runs) {
  return {
      {"comparisons", s.comparisons},
      {"valid", s.valid},
      {"regressions", s.regressions},
      {"passes", s.passes},
      {"inconclusive", s.inconclusive},
      {"invalid", s.invalid},
      {"false_positive_rate", json_number(s.false_positive_rate)},
      {"false_positive_interval",
       {{"method", "clopper-pearson"},
        {"confidence", s.confidence},
        {"lower", json_number(s.fp_exact.lower)},
        {"upper", json_number(s.fp_exact.upper)}}},
      {"false_positive_interval_wilson",
       {{"lower", json_number(s.fp_wilson.lower)}, {"upper", json_number(s.fp_wilson.upper)}}},
      {"quantile", s.quantile},
      {"noise_floor", json_number(s.noise_floor)},
      {"delta_min", json_number(s.delta_min)},
      {"median_launch_cv", json_number(s.median_cv)},
      {"median_block_sd",
       json_number(median_of(runs, [](const AaRun& r) { return r.noise.block_sd; }))},
      {"median_blocks",
       json_number(median_of(
           runs, [](const AaRun& r) { return static_cast<double>(r.comparison.blocks); }))},
      {"median_seconds", json_number(median_of(runs, [](const AaRun& r) { return r.seconds; }))}};
}

ordered_json run_json(const AaRun& run) {
  const SpeedComparison& c = run.comparison;
  return {{"decision", outcome_name(c.decision)},
          {"ratio", json_number(c.ratio)},
          {"ratio_lower", json_number(c.ratio_lower)},
          {"ratio_upper", json_number(c.ratio_upper)},
          {"p_value", json_number(c.p_value)},
          {"blocks", c.blocks},
          {"dropped_blocks", c.dropped_blocks},
          {"baseline_median_ns", json_number(c.baseline_median_ns)},
          {"candidate_median_ns", json_number(c.candidate_median_ns)},
          {"launch_cv", json_number(run.noise.cv)},
          {"block_sd", json_number(run.noise.block_sd)},
          {"seconds", run.seconds},
          {"check_seconds", json_number(c.check_seconds)},
          {"checked_launches", run.checked_launches},
          {"checks_judged", c.checks_judged},
          {"timer", c.timer},
          {"note", c.note}};
}

std::vector<const AaRun*> pointers(const std::vector<AaRun>& runs) {
  std::vector<const AaRun*> p;
  for (const AaRun& r : runs) p.push_back(&r);
  return p;
}

/// A measured fraction (a rate, the noise) as a percent with `digits` decimals, for the table; the
/// settings (delta, alpha) and the delta to raise them to print through format_percent, which
/// reads back.
std::string percent(double fraction, int digits = 2) {
  if (std::isnan(fraction)) return "-";
  if (std::isinf(fraction)) return "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f%%", digits, 100 * fraction);
  return buf;
}

/// printf-formats a finite number; "-" otherwise.
std::string fixed(const char* spec, double v) {
  if (!std::isfinite(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

void print_row(std::ostream& os, const std::string& kernel, const std::string& label,
               const speed::AaSummary& s, const std::vector<const AaRun*>& runs) {
  const double base_us =
      median_of(runs, [](const AaRun& r) { return r.comparison.baseline_median_ns; }) / 1e3;
  const std::string fp = std::to_string(s.regressions) + "/" + std::to_string(s.valid);
  const std::string interval = s.valid > 0 ? percent(s.false_positive_rate, 1) + " [" +
                                                 percent(s.fp_exact.lower, 1) + ", " +
                                                 percent(s.fp_exact.upper, 1) + "]"
                                           : "-";
  const std::string block_sd =
      fixed("%.5f", median_of(runs, [](const AaRun& r) { return r.noise.block_sd; }));
  const std::string blocks = fixed("%.0f", median_of(runs, [](const AaRun& r) {
                                     return static_cast<double>(r.comparison.blocks);
                                   }));
  printf_to(os, "%-20s %-22s %9.2f %7s %-22s %4lld %9s %9s %7s %8s %6s %6.2f\n", kernel.c_str(),
            label.c_str(), base_us, fp.c_str(), interval.c_str(),
            static_cast<long long>(s.inconclusive + s.invalid), percent(s.noise_floor).c_str(),
            percent(s.delta_min).c_str(), percent(s.median_cv, 1).c_str(), block_sd.c_str(),
            blocks.c_str(), median_of(runs, [](const AaRun& r) { return r.seconds; }));
}

std::string meta_text(const ordered_json& meta, const char* key) {
  const auto it = meta.find(key);
  return it != meta.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

/// "f32 B=4096,N=1024": a case's dtype and shape, short enough for a table column.
std::string short_case(const Case& c) {
  std::string s = std::string(dtype_name(c.dtype)) + " ";
  for (size_t i = 0; i < c.dims.size(); ++i) {
    s += (i ? "," : "") + c.dims[i].first + "=" + std::to_string(c.dims[i].second);
  }
  return s;
}

speed::AaSummary summarize_runs(const std::vector<const AaRun*>& runs) {
  std::vector<speed::AaComparison> aa;
  for (const AaRun* r : runs) aa.push_back(aa_of(*r));
  return speed::summarize_aa(aa);
}

double median_of(const std::vector<const AaRun*>& runs, double (*field)(const AaRun&)) {
  std::vector<double> x;
  for (const AaRun* r : runs) {
    const double v = field(*r);
    if (std::isfinite(v)) x.push_back(v);
  }
  return speed::percentile(x, 0.5);
}

ordered_json calibrated_kernel_json(const CalibratedKernel& kernel) {
  ordered_json kj = {{"name", kernel.name},
                     {"op", kernel.op},
                     {"backend", kernel.backend},
                     {"cases", ordered_json::array()}};
  std::vector<const AaRun*> pooled;
  for (const CaseRuns& cr : kernel.cases) {
    const auto runs = pointers(cr.runs);
    ordered_json rj = ordered_json::array();
    for (const AaRun* r : runs) rj.push_back(run_json(*r));
    kj["cases"].push_back({{"case", cr.kcase.id()},
                           {"summary", summary_json(summarize_runs(runs), runs)},
                           {"comparisons", rj}});
    pooled.insert(pooled.end(), runs.begin(), runs.end());
  }
  if (!kernel.error.empty()) kj["error"] = kernel.error;
  if (kernel.summarized) kj["summary"] = summary_json(summarize_runs(pooled), pooled);
  return kj;
}

void write_calibration_json(std::ostream& os, const CalibrationReport& calibration) {
  ordered_json doc = {{"schema", "kgate-calibrate/1"},
                      {"meta", calibration.meta},
                      {"kernels", ordered_json::array()}};
  for (const auto& k : calibration.kernels) doc["kernels"].push_back(calibrated_kernel_json(k));
  os << doc.dump(2) << "\n";
}

void write_calibration_console(std::ostream& os, const CalibrationReport& c) {
  const ordered_json config = c.meta.value("config", ordered_json::object());
  const double delta = config.value("delta", std::numeric_limits<double>::quiet_NaN());
  const double alpha = config.value("alpha", std::numeric_limits<double>::quiet_NaN());
  printf_to(
      os,
      "\nA/A calibration on %s (%s timer), delta %s, alpha %s, %s L2, %d comparisons per case\n",
      meta_text(c.meta, "device").c_str(),
      c.kernels.empty() || c.kernels[0].cases.empty() || c.kernels[0].cases[0].runs.empty()
          ? "-"
          : c.kernels[0].cases[0].runs[0].comparison.timer.c_str(),
      format_percent(delta).c_str(), format_exact(alpha).c_str(),
      meta_text(c.meta, "backend") != "cuda" ? "no"
      : config.value("flush_l2", true)       ? "cold"
                                             : "warm",
      config.value("comparisons", 0));
  printf_to(os, "%-20s %-22s %9s %7s %-22s %4s %9s %9s %7s %8s %6s %6s\n", "kernel", "case",
            "base us", "FP", "FP rate [95% CI]", "inc", "noise p95", "dmin p95", "CV", "block sd",
            "blocks", "s/cmp");
  std::vector<const AaRun*> everything;
  for (size_t ki = 0; ki < c.kernels.size(); ++ki) {
    std::vector<const AaRun*> pooled;
    for (const auto& cr : c.kernels[ki].cases) {
      std::vector<const AaRun*> runs;
      for (const auto& r : cr.runs) runs.push_back(&r);
      print_row(os, c.kernels[ki].name, short_case(cr.kcase), summarize_runs(runs), runs);
      pooled.insert(pooled.end(), runs.begin(), runs.end());
    }
    if (c.kernels[ki].cases.size() > 1)
      print_row(os, c.kernels[ki].name, "(all cases)", summarize_runs(pooled), pooled);
    everything.insert(everything.end(), pooled.begin(), pooled.end());
  }

  const auto total = summarize_runs(everything);
  printf_to(
      os,
      "\nfalse positives: %lld of %lld valid A/A comparisons = %s (95%% CI %s to %s; alpha %s)\n",
      static_cast<long long>(total.regressions), static_cast<long long>(total.valid),
      percent(total.false_positive_rate).c_str(), percent(total.fp_exact.lower).c_str(),
      percent(total.fp_exact.upper).c_str(), format_percent(alpha).c_str());
  printf_to(os,
            "noise floor (p95 |HL - 1|): %s; smallest supported delta (p95 CI half-width): %s\n",
            percent(total.noise_floor).c_str(), percent(total.delta_min).c_str());
  if (total.valid > 0 && total.fp_exact.lower > alpha) {
    printf_to(os,
              "WARNING: the false-positive rate exceeds alpha even at its lower confidence limit: "
              "timing on this machine is biased or unstable (check clocks, other load, --warm)\n");
  }
  if (std::isfinite(total.delta_min) && total.delta_min <= delta) {
    printf_to(os, "delta %s is supported (>= %s)\n", format_percent(delta).c_str(),
              format_percent(total.delta_min).c_str());
  } else if (std::isinf(total.delta_min)) {
    printf_to(os,
              "delta %s: not established: some comparisons ran too few blocks for any bound at "
              "this alpha (give each comparison more --time-budget)\n",
              format_percent(delta).c_str());
  } else if (total.valid > 0) {
    printf_to(os,
              "delta %s is NOT supported: raise --delta to at least %s, or give each comparison "
              "more --time-budget\n",
              format_percent(delta).c_str(), format_percent(total.delta_min).c_str());
  }
}

}  // namespace kgate
