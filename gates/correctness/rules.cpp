// Correctness rule evaluation.
#include "gates/correctness/rules.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "core/error.hpp"
#include "core/expr.hpp"
#include "core/format.hpp"

namespace kgate::correctness {
namespace {
std::string g(double v) { return format_number(v, "%.4g"); }
}  // namespace

RuleConfig scaled_for(const RuleConfig& rule,
                      const std::vector<std::pair<std::string, int64_t>>& dims, bool equal_values) {
  if (rule.kind == RuleKind::conditioned) {
    RuleConfig c = rule;
    c.terms = 1;
    if (!rule.terms_expr.empty())
      c.terms = static_cast<double>(std::max<int64_t>(
          1, package::evaluate_expr(rule.terms_expr, package::symbol_values(dims))));
    c.equal_values = equal_values;
    c.length = std::sqrt(c.terms);
    if (equal_values) c.length = std::max(c.length, c.terms / (2 * std::max(1.0, rule.ratio_k)));
    return c;
  }
  if (rule.scale_symbol.empty() || rule.scale_power == 0) return rule;
  const auto it = std::find_if(dims.begin(), dims.end(),
                               [&](const auto& d) { return d.first == rule.scale_symbol; });
  if (it == dims.end()) return rule;
  RuleConfig scaled = rule;
  const double factor =
      std::pow(static_cast<double>(std::max<int64_t>(1, it->second)), rule.scale_power);
  scaled.tolerance.atol *= factor;
  scaled.tolerance.rtol *= factor;
  return scaled;
}

bool as_accurate_as_eager(double kernel_vs_oracle, double eager_vs_oracle, double factor) {
  return std::isfinite(kernel_vs_oracle) && std::isfinite(eager_vs_oracle) && eager_vs_oracle > 0 &&
         kernel_vs_oracle <= factor * eager_vs_oracle;
}

std::string as_accurate_as_eager_fix() {
  return std::string(
             "most likely a tolerance too tight for the op, not a kernel bug; where each output is "
             "a sum of products, declare the op's `conditioning` (its `terms`, and a `magnitude` "
             "where the sum subtracts) in its op file (") +
         kConditioningDocs + "), else widen its tolerance";
}

std::string as_accurate_as_eager_note(double kernel_vs_oracle, double eager_vs_oracle) {
  return "; yet the kernel is as accurate as eager against the float64 oracle (max abs error " +
         g(kernel_vs_oracle) + ", eager's " + g(eager_vs_oracle) + ", within " +
         g(kAsAccurateAsEagerFactor) + "x): " + as_accurate_as_eager_fix();
}

bool failed_as_accurate_as_eager(const CaseResult& r) {
  return r.outcome == Outcome::failed && elementwise_rule(r.rule) && r.vs_oracle.elements > 0 &&
         as_accurate_as_eager(r.vs_oracle.max_abs, r.reference_vs_oracle_max_abs);
}

std::string shrunk_from_note(const CaseResult& shrunk_from, const CaseResult& minimal) {
  if (minimal.outcome != Outcome::failed || !elementwise_rule(minimal.rule) ||
      failed_as_accurate_as_eager(minimal) || !failed_as_accurate_as_eager(shrunk_from))
    return "";
  return "; shrunk from case " + shrunk_from.kcase.id() +
         ", where the kernel is as accurate as eager against the float64 oracle (max abs error " +
         g(shrunk_from.vs_oracle.max_abs) + ", eager's " +
         g(shrunk_from.reference_vs_oracle_max_abs) + ", within " + g(kAsAccurateAsEagerFactor) +
         "x): " + as_accurate_as_eager_fix();
}

namespace {

Verdict evaluate_rule(const RuleConfig& rule, const Measurement& m, DType dtype) {
  Verdict v;
  const auto& r = m.vs_reference;
  // Memory checks fail the case whatever the numeric rule; the message names every problem found.
  std::string memory;
  auto add = [&memory](const std::string& problem) {
    memory += (memory.empty() ? "" : "; ") + problem;
  };
  if (r.unwritten > 0)
    add(std::to_string(r.unwritten) + " of " + std::to_string(r.elements) +
        " output elements were never written (still hold the NaN poison)");
  if (!m.guard_bands_intact) add(kGuardBandChanged);
  if (m.inputs_modified) add(kInputModified);
  if (!memory.empty()) {
    v = {Outcome::failed,
         Reason::memory,
         r.unwritten > 0 ? static_cast<double>(r.unwritten) : 1.0,
         0,
         INFINITY,
         memory};
    return v;
  }
  if (r.nan_mismatches > 0) {
    v = {Outcome::failed,
         Reason::nan_contract,
         static_cast<double>(r.nan_mismatches),
         0,
         INFINITY,
         std::to_string(r.nan_mismatches) +
             " elements differ from the reference in their NaN/Inf pattern"};
    return v;
  }
  return rule_spec(rule.kind).judge(rule, m, dtype);
}

}  // namespace

Verdict evaluate(const RuleConfig& rule, const Measurement& m, DType dtype) {
  Verdict v = evaluate_rule(rule, m, dtype);
  // A kernel failing an elementwise rule while as close to the oracle as eager: the tolerance,
  // most likely, and the message says so (the verdict stands).
  if (v.outcome == Outcome::failed && elementwise_rule(v.rule) && m.vs_oracle.elements > 0 &&
      as_accurate_as_eager(m.vs_oracle.max_abs, m.reference_vs_oracle_max_abs))
    v.message += as_accurate_as_eager_note(m.vs_oracle.max_abs, m.reference_vs_oracle_max_abs);
  if (v.outcome == Outcome::failed && m.start_held > 0 && v.rule != Reason::memory)
    v.message = std::to_string(m.start_held) + " of " + std::to_string(m.vs_reference.elements) +
                " output elements still hold their start value " + g(m.start_value) +
                " where the reference holds another (never written?); " + v.message;
  return v;
}

CaseVerdict judge_case(const std::vector<OutputMeasurement>& outputs) {
  std::optional<CaseVerdict> chosen;
  for (const auto& o : outputs) {
    Verdict v = evaluate(o.rule, o.measurement, o.dtype);
    if (outputs.size() > 1 && !v.message.empty())
      v.message = "output '" + o.name + "': " + v.message;
    const bool better =
        !chosen || (chosen->verdict.outcome != Outcome::failed &&
                    (v.outcome == Outcome::failed ||
                     (std::isfinite(v.margin) && v.margin > chosen->verdict.margin)));
    if (better) chosen = CaseVerdict{std::move(v), o.measurement};
  }
  return chosen ? *chosen : CaseVerdict{};
}

}  // namespace kgate::correctness
