// kgate calibrate's writer (report/calibration.hpp): calibrate.json from a CalibrationReport.
#include "report/calibration.hpp"

#include <cmath>

#include "core/outcome.hpp"

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

}  // namespace

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

}  // namespace kgate
