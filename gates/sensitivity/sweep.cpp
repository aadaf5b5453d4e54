// Tolerance sensitivity summaries.
#include "gates/sensitivity/sweep.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace kgate::sensitivity {

Quantiles quantiles(std::vector<double> values) {
  Quantiles q;
  if (values.empty()) return q;
  std::sort(values.begin(), values.end());
  const auto at = [&values](double p) {
    // Nearest rank: the smallest value with at least p of the values at or below it.
    const auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size())));
    return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
  };
  q.p50 = at(0.5);
  q.p90 = at(0.9);
  q.p99 = at(0.99);
  q.max = values.back();
  return q;
}

DtypeSweep summarize(DType dtype, const std::vector<CaseErrors>& cases, const SweepGrid& grid,
                     double fragile_margin) {
  if (!(fragile_margin > 0 && fragile_margin <= 1))
    throw_usage("the fragility threshold must be in (0, 1], got " + std::to_string(fragile_margin));
  constexpr double kInf = std::numeric_limits<double>::infinity();
  DtypeSweep s;
  s.dtype = dtype;
  s.cases = static_cast<int64_t>(cases.size());
  s.pass_rate.assign(grid.rtols.size(), std::vector<double>(grid.atols.size(), 0.0));
  s.frontier_atol.assign(grid.rtols.size(), 0.0);
  s.scale_pass_rate.assign(grid.scales.size(), 0.0);
  if (cases.empty()) {
    s.verdict = "ok";
    return s;
  }

  std::vector<double> abs_errors, rel_errors, margins;
  for (const CaseErrors& c : cases) {
    const bool fails = c.hard_failure || !(c.margin <= 1);  // a NaN margin fails
    if (fails) ++s.failed;
    if (c.hard_failure) {
      ++s.hard_failures;
      s.worst_margin = kInf;
    } else {
      abs_errors.push_back(c.max_abs);
      rel_errors.push_back(c.max_rel);
      margins.push_back(c.margin);
      s.worst_margin = std::max(s.worst_margin, std::isnan(c.margin) ? kInf : c.margin);
    }
    for (size_t k = 0; k < grid.scales.size(); ++k)
      if (!c.hard_failure && c.margin <= grid.scales[k]) s.scale_pass_rate[k] += 1;
    for (size_t r = 0; r < grid.rtols.size(); ++r) {
      const bool measured =
          !c.hard_failure && r < c.needed_atol.size() && !std::isnan(c.needed_atol[r]);
      const double need = measured ? c.needed_atol[r] : kInf;
      s.frontier_atol[r] = std::max(s.frontier_atol[r], need);
      for (size_t a = 0; a < grid.atols.size(); ++a)
        if (need <= grid.atols[a]) s.pass_rate[r][a] += 1;
    }
  }
  const double n = static_cast<double>(cases.size());
  for (auto& row : s.pass_rate)
    for (double& v : row) v /= n;
  for (double& v : s.scale_pass_rate) v /= n;
  s.max_abs = quantiles(abs_errors);
  s.max_rel = quantiles(rel_errors);
  s.margin = quantiles(margins);
  s.fragile = s.failed == 0 && s.worst_margin > fragile_margin;
  s.verdict = s.failed > 0 ? "FAILED" : s.fragile ? "FRAGILE" : "ok";
  return s;
}

}  // namespace kgate::sensitivity
