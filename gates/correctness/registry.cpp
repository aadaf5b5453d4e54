// The correctness rules, one entry each: who may choose it, the device reductions it reads, the
// tolerance against eager that implies it, and its verdict. Adding a rule: its Reason (and name) in
// core/reason.hpp, its entry here, its name in core/kgate-op.schema.json's enum (a test holds the
// schema to this list), and a device reduction in runtime/judge_outputs.cpp if none it reads
// exists.
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/format.hpp"
#include "gates/correctness/rules.hpp"

namespace kgate::correctness {
namespace {

std::string g(double v) { return format_number(v, "%.4g"); }

constexpr unsigned kOracle = static_cast<unsigned>(Reduction::oracle);
constexpr unsigned kRelative = static_cast<unsigned>(Reduction::relative);
constexpr unsigned kMagnitude = static_cast<unsigned>(Reduction::magnitude);
constexpr unsigned kIndex = static_cast<unsigned>(Reduction::index);

// Tolerances against eager that imply a rule (RuleSpec::eager_allowance). eager_relative
// (|out - oracle| <= k max(|eager - oracle|, eps |oracle|) + atol): since |out - oracle| <=
// |out - eager| + |eager - oracle|, |out - eager| <= (k - 1) eps |eager| / 2 + atol suffices
// (|eager| <= 2 max(|oracle|, |eager - oracle|)); conditioned's allowance holds eager_relative's.
// ulp: max_ulp eps |eager| / 2 (an ulp is at least eps |x| / 2). ref_ratio and index: the floor
// or exact.
Tolerance allclose_allowance(const RuleConfig& rule, DType) { return rule.tolerance; }
Tolerance relative_allowance(const RuleConfig& rule, DType dtype) {
  return Tolerance{rule.tolerance.atol, std::max(0.0, rule.ratio_k - 1) * dtype_eps(dtype) / 2};
}
Tolerance ulp_allowance(const RuleConfig& rule, DType dtype) {
  return Tolerance{0, rule.max_ulp * dtype_eps(dtype) / 2};
}
Tolerance ref_ratio_allowance(const RuleConfig& rule, DType) {
  return Tolerance{rule.ratio_floor, 0};
}
Tolerance exact_allowance(const RuleConfig&, DType) { return Tolerance{0, 0}; }

Verdict judge_allclose(const RuleConfig& rule, const Measurement& m, DType) {
  const auto& r = m.vs_reference;
  Verdict v;
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
  return v;
}

Verdict judge_ulp(const RuleConfig& rule, const Measurement& m, DType) {
  Verdict v;
  v.rule = Reason::ulp;
  v.observed = m.max_ulp;
  v.allowed = rule.max_ulp;
  v.margin = rule.max_ulp > 0 ? m.max_ulp / rule.max_ulp : (m.max_ulp > 0 ? INFINITY : 0);
  if (m.max_ulp > rule.max_ulp) {
    v.outcome = Outcome::failed;
    v.message = "max ULP distance " + g(m.max_ulp) + " exceeds " + g(rule.max_ulp) +
                (m.worst_element.empty() ? "" : "; worst " + m.worst_element);
  }
  return v;
}

Verdict judge_ref_ratio(const RuleConfig& rule, const Measurement& m, DType dtype) {
  Verdict v;
  v.rule = Reason::ref_ratio;
  const double floor = rule.ratio_floor > 0 ? rule.ratio_floor : 2 * dtype_eps(dtype);
  v.observed = m.vs_oracle.max_abs;
  v.allowed = rule.ratio_k * m.reference_vs_oracle_max_abs + floor;
  v.margin = v.allowed > 0 ? v.observed / v.allowed : INFINITY;
  if (!(v.observed <= v.allowed)) {
    v.outcome = Outcome::failed;
    v.message = "error vs the fp64 oracle " + g(v.observed) + " exceeds " + g(rule.ratio_k) +
                " x the eager reference's own error " + g(m.reference_vs_oracle_max_abs) + " + " +
                g(floor);
  }
  return v;
}

// eager_relative and conditioned: element by element against the oracle; the runner measured the
// worst ratio to the allowance and the elements above it. conditioned's allowance holds one more
// scale.
Verdict judge_relative(const RuleConfig& rule, const Measurement& m, DType dtype) {
  const auto& r = m.vs_reference;
  const bool conditioned = rule.kind == RuleKind::conditioned;
  Verdict v;
  v.rule = rule.kind;
  v.observed = m.relative_worst;
  v.allowed = 1;
  v.margin = m.relative_worst;
  if (m.relative_mismatches > 0 || !(m.relative_worst <= 1)) {
    const std::string terms = rule.terms_expr.empty() ? "1" : rule.terms_expr + "=" + g(rule.terms);
    const std::string length =
        rule.equal_values ? "max(sqrt(" + terms + "), " + terms + " / " + g(2 * rule.ratio_k) + ")"
                          : "sqrt(" + terms + ")";
    // The accumulation's epsilon: float32's, or the output dtype's where the op computes in it.
    const bool coarse = accumulation_eps(rule, dtype) > dtype_eps(DType::f32);
    const std::string eps_acc = coarse ? "eps_" + std::string(dtype_name(dtype)) : "eps_f32";
    v.outcome = Outcome::failed;
    v.message = std::to_string(m.relative_mismatches) + " of " + std::to_string(r.elements) +
                " elements are further from the fp64 oracle than " + g(rule.ratio_k) +
                " x max(eager's own error, eps x |oracle|" +
                (conditioned ? ", " + eps_acc + " x (sum |terms| + " + length + " x |oracle|)"
                             : std::string()) +
                ") + atol=" + g(rule.tolerance.atol) + " (worst at " + g(m.relative_worst) +
                " x the allowance)" +
                (conditioned && rule.equal_values ? "; the case's values are all equal, so a sum's "
                                                    "rounding errors add up (linear in its length)"
                                                  : "");
  }
  return v;
}

Verdict judge_index(const RuleConfig&, const Measurement& m, DType) {
  const auto& r = m.vs_reference;
  Verdict v;
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
    add_problem(std::to_string(m.index_mismatches) + " of " + std::to_string(r.elements) +
                " indices select a value other than the reference's (ties may come in any order)");
  v.observed =
      static_cast<double>(m.index_out_of_range + m.index_duplicate_rows + m.index_mismatches);
  v.margin = v.observed > 0 ? INFINITY : 0;
  if (!problems.empty()) {
    v.outcome = Outcome::failed;
    v.message = problems;
  }
  return v;
}

}  // namespace

const std::vector<RuleSpec>& rule_registry() {
  // In the order the rules are listed to users (rule_list).
  static const std::vector<RuleSpec> rules = {
      {RuleKind::allclose, true, true, 0, allclose_allowance, judge_allclose},
      {RuleKind::ulp, true, false, 0, ulp_allowance, judge_ulp},
      {RuleKind::ref_ratio, true, false, kOracle, ref_ratio_allowance, judge_ref_ratio},
      {RuleKind::eager_relative, true, true, kOracle | kRelative, relative_allowance,
       judge_relative},
      {RuleKind::index, false, false, kIndex, exact_allowance, judge_index},
      {RuleKind::conditioned, true, false, kOracle | kRelative | kMagnitude, relative_allowance,
       judge_relative},
  };
  return rules;
}

const RuleSpec& rule_spec(RuleKind kind) {
  for (const auto& r : rule_registry())
    if (r.kind == kind) return r;
  throw Error(ErrorKind::internal, std::string("'") + reason_name(kind) +
                                       "' is no correctness rule (gates/correctness/registry.cpp)");
}

const char* rule_name(RuleKind kind) { return reason_name(rule_spec(kind).kind); }
bool rule_needs(RuleKind kind, Reduction reduction) {
  return (rule_spec(kind).needs & static_cast<unsigned>(reduction)) != 0;
}
Tolerance eager_allowance(const RuleConfig& rule, DType dtype) {
  return rule_spec(rule.kind).eager_allowance(rule, dtype);
}

double accumulation_eps(const RuleConfig& rule, DType dtype) {
  const double eps_float = dtype_eps(dtype == DType::f64 ? DType::f64 : DType::f32);
  return rule.accumulate_in_case_dtype ? std::max(eps_float, dtype_eps(dtype)) : eps_float;
}

const std::vector<std::string>& rule_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& r : rule_registry())
      if (r.choosable) out.push_back(reason_name(r.kind));
    return out;
  }();
  return names;
}

std::string rule_list() {
  const auto& names = rule_names();
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

RuleKind parse_rule(const std::string& name) {
  for (const auto& r : rule_registry())
    if (r.choosable && name == reason_name(r.kind)) return r.kind;
  throw_usage("unknown correctness rule '" + name + "': expected " + rule_list());
}

bool elementwise_rule(Reason rule) {
  for (const auto& r : rule_registry())
    if (r.kind == rule) return r.elementwise;
  return false;
}

bool chosen_rule(Reason reason) {
  for (const auto& r : rule_registry())
    if (r.kind == reason) return r.choosable;
  return false;
}

}  // namespace kgate::correctness
