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

const char* rule_name(RuleKind kind) {
  switch (kind) {
    case RuleKind::allclose:
      return "allclose";
    case RuleKind::ulp:
      return "ulp";
    case RuleKind::ref_ratio:
      return "ref_ratio";
    case RuleKind::eager_relative:
      return "eager_relative";
    case RuleKind::index:
      return "index";
    case RuleKind::conditioned:
      return "conditioned";
  }
  return "?";
}

std::string rule_list() {
  const auto& names = rule_names();
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

const std::vector<std::string>& rule_names() {
  static const std::vector<std::string> names = {"allclose", "ulp", "ref_ratio", "eager_relative",
                                                 "conditioned"};
  return names;
}

Reason rule_reason(RuleKind kind) {
  switch (kind) {
    case RuleKind::allclose:
      return Reason::allclose;
    case RuleKind::ulp:
      return Reason::ulp;
    case RuleKind::ref_ratio:
      return Reason::ref_ratio;
    case RuleKind::eager_relative:
      return Reason::eager_relative;
    case RuleKind::index:
      return Reason::index;
    case RuleKind::conditioned:
      return Reason::conditioned;
  }
  return Reason::none;
}

RuleKind parse_rule(const std::string& name) {
  for (RuleKind k : {RuleKind::allclose, RuleKind::ulp, RuleKind::ref_ratio,
                     RuleKind::eager_relative, RuleKind::conditioned})
    if (name == rule_name(k)) return k;
  throw_usage("unknown correctness rule '" + name + "': expected " + rule_list());
}

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

bool elementwise_rule(Reason rule) {
  return rule == Reason::allclose || rule == Reason::eager_relative;
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
  switch (rule.kind) {
    case RuleKind::index: {
      v.rule = Reason::index;
      v.allowed = 0;
      std::string problems;
      auto add_problem = [&problems](const std::string& p) {
        problems += (problems.empty() ? "" : "; ") + p;
      };
      if (m.index_out_of_range > 0)
        add_problem(std::to_string(m.index_out_of_range) + " of " + std::to_string(r.elements) +
                    " indices outside [0, " + std::to_string(m.index_bound) + ")");
      if (m.index_duplicate_rows > 0)
        add_problem(std::to_string(m.index_duplicate_rows) + " rows hold an index twice");
      if (m.index_mismatches > 0)
        add_problem(
            std::to_string(m.index_mismatches) + " of " + std::to_string(r.elements) +
            " indices select a value other than the reference's (ties may come in any order)");
      v.observed =
          static_cast<double>(m.index_out_of_range + m.index_duplicate_rows + m.index_mismatches);
      v.margin = v.observed > 0 ? INFINITY : 0;
      if (!problems.empty()) {
        v.outcome = Outcome::failed;
        v.message = problems;
      }
      break;
    }
    case RuleKind::eager_relative:
    case RuleKind::conditioned: {
      // Element by element against the oracle; the runner measured the worst ratio to the
      // allowance and the elements above it. conditioned's allowance holds one more scale.
      const bool conditioned = rule.kind == RuleKind::conditioned;
      v.rule = rule_reason(rule.kind);
      v.observed = m.relative_worst;
      v.allowed = 1;
      v.margin = m.relative_worst;
      if (m.relative_mismatches > 0 || !(m.relative_worst <= 1)) {
        const std::string terms =
            rule.terms_expr.empty() ? "1" : rule.terms_expr + "=" + g(rule.terms);
        const std::string length = rule.equal_values ? "max(sqrt(" + terms + "), " + terms + " / " +
                                                           g(2 * rule.ratio_k) + ")"
                                                     : "sqrt(" + terms + ")";
        v.outcome = Outcome::failed;
        v.message =
            std::to_string(m.relative_mismatches) + " of " + std::to_string(r.elements) +
            " elements are further from the fp64 oracle than " + g(rule.ratio_k) +
            " x max(eager's own error, eps x |oracle|" +
            (conditioned ? ", eps_f32 x (sum |terms| + " + length + " x |oracle|)"
                         : std::string()) +
            ") + atol=" + g(rule.tolerance.atol) + " (worst at " + g(m.relative_worst) +
            " x the allowance)" +
            (conditioned && rule.equal_values ? "; the case's values are all equal, so a sum's "
                                                "rounding errors add up (linear in its length)"
                                              : "");
      }
      break;
    }
    case RuleKind::allclose: {
      v.rule = Reason::allclose;
      v.observed = m.allclose_worst;
      v.allowed = 1;
      v.margin = m.allclose_worst;
      if (r.mismatches > 0 || m.allclose_worst > 1) {
        v.outcome = Outcome::failed;
        v.message = std::to_string(r.mismatches) + " of " + std::to_string(r.elements) +
                    " elements outside atol=" + g(rule.tolerance.atol) +
                    " rtol=" + g(rule.tolerance.rtol) + " (max abs err " + g(r.max_abs) +
                    ", max rel err " + g(r.max_rel) + ")" +
                    (m.worst_element.empty() ? "" : "; worst " + m.worst_element);
      }
      break;
    }
    case RuleKind::ulp: {
      v.rule = Reason::ulp;
      v.observed = m.max_ulp;
      v.allowed = rule.max_ulp;
      v.margin = rule.max_ulp > 0 ? m.max_ulp / rule.max_ulp : (m.max_ulp > 0 ? INFINITY : 0);
      if (m.max_ulp > rule.max_ulp) {
        v.outcome = Outcome::failed;
        v.message = "max ULP distance " + g(m.max_ulp) + " exceeds " + g(rule.max_ulp) +
                    (m.worst_element.empty() ? "" : "; worst " + m.worst_element);
      }
      break;
    }
    case RuleKind::ref_ratio: {
      v.rule = Reason::ref_ratio;
      const double floor = rule.ratio_floor > 0 ? rule.ratio_floor : 2 * dtype_eps(dtype);
      v.observed = m.vs_oracle.max_abs;
      v.allowed = rule.ratio_k * m.reference_vs_oracle_max_abs + floor;
      v.margin = v.allowed > 0 ? v.observed / v.allowed : INFINITY;
      if (!(v.observed <= v.allowed)) {
        v.outcome = Outcome::failed;
        v.message = "error vs the fp64 oracle " + g(v.observed) + " exceeds " + g(rule.ratio_k) +
                    " x the eager reference's own error " + g(m.reference_vs_oracle_max_abs) +
                    " + " + g(floor);
      }
      break;
    }
  }
  return v;
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
