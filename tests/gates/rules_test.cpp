// Correctness rules: each rule passes inside its bound, fails outside, and reports the margin.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "gates/correctness/rules.hpp"

namespace kgate::correctness {
namespace {

Measurement clean() {
  Measurement m;
  m.vs_reference.elements = 100;
  m.allclose_worst = 0.5;
  m.max_ulp = 2;
  m.vs_oracle.max_abs = 1e-6;
  m.reference_vs_oracle_max_abs = 1e-6;
  return m;
}

TEST(Rules, AllcloseUsesTheWorstRatio) {
  RuleConfig rule;
  rule.tolerance = {1e-5, 1.3e-6};
  auto v = evaluate(rule, clean(), DType::f32);
  EXPECT_EQ(v.outcome, Outcome::passed);
  EXPECT_DOUBLE_EQ(v.margin, 0.5);
  auto m = clean();
  m.allclose_worst = 3;
  m.vs_reference.mismatches = 2;
  v = evaluate(rule, m, DType::f32);
  EXPECT_EQ(v.outcome, Outcome::failed);
  EXPECT_EQ(v.rule, "allclose");
  EXPECT_NE(v.message.find("2 of 100 elements outside atol=1e-05 rtol=1.3e-06"), std::string::npos);
}

TEST(Rules, AStartValueHeldIsNamedOnlyWhenTheCaseFails) {
  RuleConfig rule;
  rule.tolerance = {1e-5, 1.3e-6};
  auto m = clean();
  m.start_held = 7;  // 7 elements hold the start value 0 where the reference is not 0 ...
  m.start_value = 0;
  auto v = evaluate(rule, m, DType::f32);
  EXPECT_EQ(v.outcome, Outcome::passed);  // ... within the tolerance: right answers
  EXPECT_EQ(v.message.find("start value"), std::string::npos);
  m.allclose_worst = 3;
  m.vs_reference.mismatches = 7;
  v = evaluate(rule, m, DType::f32);
  EXPECT_EQ(v.outcome, Outcome::failed);
  EXPECT_EQ(v.rule, "allclose");
  EXPECT_EQ(v.message.rfind("7 of 100 output elements still hold their start value 0 where the reference holds another", 0), 0u)
      << v.message;
  EXPECT_NE(v.message.find("7 of 100 elements outside"), std::string::npos);
  m.start_value = -INFINITY;
  EXPECT_NE(evaluate(rule, m, DType::f32).message.find("start value -inf"), std::string::npos);
}

// The case's verdict from several outputs (judge_case): what judge_outputs does after measuring.
OutputMeasurement output(const std::string& name, double allclose_worst, int64_t mismatches = 0) {
  OutputMeasurement o;
  o.name = name;
  o.rule.tolerance = {1e-5, 1.3e-6};
  o.measurement = clean();
  o.measurement.allclose_worst = allclose_worst;
  o.measurement.vs_reference.mismatches = mismatches;
  o.measurement.worst_element = "in " + name;  // (tells the outputs apart)
  return o;
}

TEST(Rules, ACaseIsJudgedByItsFirstFailingOutputElseItsNearestToTolerance) {
  // Both pass: the one nearest its tolerance, with no output named in a passing message.
  auto v = judge_case({output("y", 0.25), output("z", 0.75)});
  EXPECT_EQ(v.verdict.outcome, Outcome::passed);
  EXPECT_DOUBLE_EQ(v.verdict.margin, 0.75);
  EXPECT_DOUBLE_EQ(v.measurement.allclose_worst, 0.75);  // the measurement of the output chosen
  // The second fails: it is the verdict, named.
  v = judge_case({output("y", 0.25), output("z", 4, 3)});
  EXPECT_EQ(v.verdict.outcome, Outcome::failed);
  EXPECT_EQ(v.verdict.message.rfind("output 'z': 3 of 100 elements outside", 0), 0u) << v.verdict.message;
  EXPECT_EQ(v.measurement.vs_reference.mismatches, 3);
  // Both fail: the first, however much worse the second is.
  v = judge_case({output("y", 2, 1), output("z", 50, 90)});
  EXPECT_EQ(v.verdict.message.rfind("output 'y': 1 of 100", 0), 0u) << v.verdict.message;
  // Ties keep the first.
  v = judge_case({output("y", 0.5), output("z", 0.5)});
  EXPECT_EQ(v.verdict.margin, 0.5);
  EXPECT_EQ(v.measurement.worst_element, "in y");
  // One output: its message is the rule's own.
  v = judge_case({output("y", 3, 2)});
  EXPECT_EQ(v.verdict.message.rfind("2 of 100 elements outside", 0), 0u) << v.verdict.message;
  // None: passed, nothing said.
  v = judge_case({});
  EXPECT_EQ(v.verdict.outcome, Outcome::passed);
  EXPECT_TRUE(v.verdict.message.empty());
}

TEST(Rules, Ulp) {
  RuleConfig rule;
  rule.kind = RuleKind::ulp;
  rule.max_ulp = 4;
  EXPECT_EQ(evaluate(rule, clean(), DType::f32).outcome, Outcome::passed);
  auto m = clean();
  m.max_ulp = 5;
  const auto v = evaluate(rule, m, DType::f32);
  EXPECT_EQ(v.outcome, Outcome::failed);
  EXPECT_DOUBLE_EQ(v.margin, 1.25);
}

TEST(Rules, RefRatioScalesWithTheReferencesOwnError) {
  RuleConfig rule;
  rule.kind = RuleKind::ref_ratio;
  rule.ratio_k = 2;
  rule.ratio_floor = 1e-9;
  auto m = clean();
  m.vs_oracle.max_abs = 2e-6;  // exactly 2x the reference's error: inside with the floor
  EXPECT_EQ(evaluate(rule, m, DType::f32).outcome, Outcome::passed);
  m.vs_oracle.max_abs = 3e-6;
  const auto v = evaluate(rule, m, DType::f32);
  EXPECT_EQ(v.outcome, Outcome::failed);
  EXPECT_NEAR(v.allowed, 2e-6 + 1e-9, 1e-15);
}

TEST(Rules, MemoryChecksFailUnderAnyRule) {
  for (RuleKind kind : {RuleKind::allclose, RuleKind::ulp, RuleKind::ref_ratio}) {
    RuleConfig rule;
    rule.kind = kind;
    auto m = clean();
    m.vs_reference.unwritten = 3;
    EXPECT_EQ(evaluate(rule, m, DType::f32).rule, "memory");
    m = clean();
    m.guard_bands_intact = false;
    EXPECT_EQ(evaluate(rule, m, DType::f32).outcome, Outcome::failed);
    m = clean();
    m.inputs_modified = true;
    EXPECT_NE(evaluate(rule, m, DType::f32).message.find("modified its input"), std::string::npos);
    m = clean();
    m.vs_reference.nan_mismatches = 1;
    EXPECT_EQ(evaluate(rule, m, DType::f32).rule, "nan_contract");
  }
}

TEST(Rules, AMemoryVerdictNamesEveryProblem) {
  RuleConfig rule;
  auto m = clean();
  m.vs_reference.unwritten = 2;
  m.guard_bands_intact = false;
  m.inputs_modified = true;
  const auto v = evaluate(rule, m, DType::f32);
  EXPECT_EQ(v.rule, "memory");
  EXPECT_EQ(v.observed, 2);
  EXPECT_EQ(v.message.find("2 of "), 0u) << v.message;  // unwritten first, as before
  EXPECT_NE(v.message.find(kGuardBandChanged), std::string::npos) << v.message;
  EXPECT_NE(v.message.find(kInputModified), std::string::npos) << v.message;
  m = clean();
  m.guard_bands_intact = false;
  EXPECT_EQ(evaluate(rule, m, DType::f32).message, kGuardBandChanged);
  m = clean();
  m.inputs_modified = true;
  EXPECT_EQ(evaluate(rule, m, DType::f32).message, kInputModified);
}

TEST(Rules, EagerRelativeIsElementwise) {
  RuleConfig rule;
  rule.kind = RuleKind::eager_relative;
  auto m = clean();
  m.relative_worst = 0.9;  // the runner's element-wise ratio, worst element
  auto v = evaluate(rule, m, DType::f16);
  EXPECT_EQ(v.outcome, Outcome::passed);
  EXPECT_DOUBLE_EQ(v.margin, 0.9);
  m.relative_worst = 1.5;
  m.relative_mismatches = 3;
  v = evaluate(rule, m, DType::f16);
  EXPECT_EQ(v.outcome, Outcome::failed);
  EXPECT_EQ(v.rule, "eager_relative");
  EXPECT_NE(v.message.find("3 of 100 elements are further from the fp64 oracle than 4 x max(eager's own error"),
            std::string::npos)
      << v.message;
  m.relative_worst = NAN;  // never a pass
  EXPECT_EQ(evaluate(rule, m, DType::f16).outcome, Outcome::failed);
}

// A sum's rounding errors grow as sqrt(terms) where they cancel; on rows of equal values they add,
// and the allowance is the worst-case bound terms * u (length terms / 2k).
TEST(Rules, ConditionedLengthIsLinearOnEqualValues) {
  RuleConfig rule;
  rule.kind = RuleKind::conditioned;
  rule.terms_expr = "N";
  const auto random = scaled_for(rule, {{"N", 4096}});
  EXPECT_FALSE(random.equal_values);
  EXPECT_DOUBLE_EQ(random.length, 64);
  const auto equal = scaled_for(rule, {{"N", 4096}}, true);
  EXPECT_TRUE(equal.equal_values);
  EXPECT_DOUBLE_EQ(equal.length, 4096.0 / 8);
  EXPECT_DOUBLE_EQ(scaled_for(rule, {{"N", 16}}, true).length, 4);  // short rows: sqrt still
  auto m = clean();
  m.relative_worst = 3;
  m.relative_mismatches = 1;
  const auto v = evaluate(equal, m, DType::f32);
  EXPECT_EQ(v.outcome, Outcome::failed);
  EXPECT_NE(v.message.find("max(sqrt(N=4096), N=4096 / 8) x |oracle|"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("values are all equal"), std::string::npos) << v.message;
  const auto r = evaluate(random, m, DType::f32).message;
  EXPECT_NE(r.find("sqrt(N=4096) x |oracle|"), std::string::npos) << r;
  EXPECT_EQ(r.find("all equal"), std::string::npos) << r;
}

TEST(Rules, ConditionedCountsTheTermsOfEachCase) {
  RuleConfig rule;
  rule.kind = RuleKind::conditioned;
  rule.terms_expr = "2*K";
  rule.scale_symbol = "K";  // ignored: sqrt(terms) is conditioned's growth with K
  rule.scale_power = 0.5;
  rule.tolerance = {1e-5, 1.3e-6};
  const auto scaled = scaled_for(rule, {{"M", 3}, {"K", 512}});
  EXPECT_DOUBLE_EQ(scaled.terms, 1024);
  EXPECT_DOUBLE_EQ(scaled.tolerance.atol, 1e-5);
  EXPECT_DOUBLE_EQ(scaled_for(rule, {{"M", 3}, {"K", 0}}).terms, 1);  // an empty sum: one term
  rule.terms_expr.clear();
  EXPECT_DOUBLE_EQ(scaled_for(rule, {{"K", 512}}).terms, 1);
  auto m = clean();
  m.relative_worst = 0.4;
  EXPECT_EQ(evaluate(scaled, m, DType::f32).outcome, Outcome::passed);
  m.relative_worst = 6;
  m.relative_mismatches = 7;
  const auto v = evaluate(scaled, m, DType::f32);
  EXPECT_EQ(v.outcome, Outcome::failed);
  EXPECT_EQ(v.rule, "conditioned");
  EXPECT_DOUBLE_EQ(v.margin, 6);
  EXPECT_NE(v.message.find("7 of 100 elements are further from the fp64 oracle than 4 x max(eager's own error, "
                           "eps x |oracle|, eps_f32 x (sum |terms| + sqrt(2*K=1024) x |oracle|))"),
            std::string::npos)
      << v.message;
  m.relative_worst = NAN;
  m.relative_mismatches = 0;
  EXPECT_EQ(evaluate(scaled, m, DType::f32).outcome, Outcome::failed);
  EXPECT_EQ(parse_rule("conditioned"), RuleKind::conditioned);
  EXPECT_EQ(rule_list(), "allclose, ulp, ref_ratio, eager_relative or conditioned");
}

TEST(Rules, IndexRuleNamesEachProblem) {
  RuleConfig rule;
  rule.kind = RuleKind::index;
  auto m = clean();
  EXPECT_EQ(evaluate(rule, m, DType::i64).outcome, Outcome::passed);
  m.index_bound = 50;
  m.index_out_of_range = 1;
  m.index_duplicate_rows = 2;
  m.index_mismatches = 3;
  const auto v = evaluate(rule, m, DType::i64);
  EXPECT_EQ(v.outcome, Outcome::failed);
  EXPECT_EQ(v.rule, "index");
  EXPECT_NE(v.message.find("1 of 100 indices outside [0, 50)"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("2 rows hold an index twice"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("3 of 100 indices select a value other than the reference's"), std::string::npos);
  m = clean();
  m.vs_reference.unwritten = 4;  // the memory checks come first
  EXPECT_EQ(evaluate(rule, m, DType::i64).rule, "memory");
}

TEST(Rules, ToleranceScalesWithASymbol) {
  RuleConfig rule;
  rule.tolerance = {1e-5, 2e-6};
  rule.scale_symbol = "K";
  rule.scale_power = 0.5;
  const auto scaled = scaled_for(rule, {{"M", 3}, {"K", 400}});
  EXPECT_DOUBLE_EQ(scaled.tolerance.atol, 2e-4);
  EXPECT_DOUBLE_EQ(scaled.tolerance.rtol, 4e-5);
  EXPECT_DOUBLE_EQ(scaled_for(rule, {{"K", 0}}).tolerance.rtol, 2e-6);  // K = 0: no growth
  rule.scale_symbol.clear();
  EXPECT_DOUBLE_EQ(scaled_for(rule, {{"K", 400}}).tolerance.rtol, 2e-6);
}

TEST(Rules, Names) {
  EXPECT_EQ(parse_rule("ref_ratio"), RuleKind::ref_ratio);
  EXPECT_EQ(parse_rule("eager_relative"), RuleKind::eager_relative);
  EXPECT_THROW(parse_rule("close_enough"), Error);
  EXPECT_THROW(parse_rule("index"), Error);  // only for index outputs, never chosen
}

}  // namespace
}  // namespace kgate::correctness
