// Correctness rules: each rule passes inside its bound, fails outside, and reports the margin.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/report.hpp"
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
  EXPECT_EQ(v.rule, Reason::allclose);
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
  EXPECT_EQ(v.rule, Reason::allclose);
  EXPECT_EQ(v.message.rfind("7 of 100 output elements still hold their start value 0 where the "
                            "reference holds another",
                            0),
            0u)
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
  EXPECT_EQ(v.verdict.message.rfind("output 'z': 3 of 100 elements outside", 0), 0u)
      << v.verdict.message;
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
    EXPECT_EQ(evaluate(rule, m, DType::f32).rule, Reason::memory);
    m = clean();
    m.guard_bands_intact = false;
    EXPECT_EQ(evaluate(rule, m, DType::f32).outcome, Outcome::failed);
    m = clean();
    m.inputs_modified = true;
    EXPECT_NE(evaluate(rule, m, DType::f32).message.find("modified its input"), std::string::npos);
    m = clean();
    m.vs_reference.nan_mismatches = 1;
    EXPECT_EQ(evaluate(rule, m, DType::f32).rule, Reason::nan_contract);
  }
}

TEST(Rules, AMemoryVerdictNamesEveryProblem) {
  RuleConfig rule;
  auto m = clean();
  m.vs_reference.unwritten = 2;
  m.guard_bands_intact = false;
  m.inputs_modified = true;
  const auto v = evaluate(rule, m, DType::f32);
  EXPECT_EQ(v.rule, Reason::memory);
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
  EXPECT_EQ(v.rule, Reason::eager_relative);
  EXPECT_NE(
      v.message.find(
          "3 of 100 elements are further from the fp64 oracle than 4 x max(eager's own error"),
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
  EXPECT_NE(v.message.find("max(sqrt(N=4096), N=4096 / 8) x |oracle|"), std::string::npos)
      << v.message;
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
  EXPECT_EQ(v.rule, Reason::conditioned);
  EXPECT_DOUBLE_EQ(v.margin, 6);
  EXPECT_NE(
      v.message.find(
          "7 of 100 elements are further from the fp64 oracle than 4 x max(eager's own error, "
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
  EXPECT_EQ(v.rule, Reason::index);
  EXPECT_NE(v.message.find("1 of 100 indices outside [0, 50)"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("2 rows hold an index twice"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("3 of 100 indices select a value other than the reference's"),
            std::string::npos);
  m = clean();
  m.vs_reference.unwritten = 4;  // the memory checks come first
  EXPECT_EQ(evaluate(rule, m, DType::i64).rule, Reason::memory);
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

// Is a failing kernel as accurate as eager against the float64 oracle? Within 2x eager's own
// largest error, on synthetic numbers.
TEST(AsAccurateAsEager, WithinTwiceEagersOwnError) {
  EXPECT_DOUBLE_EQ(kAsAccurateAsEagerFactor, 2);
  EXPECT_TRUE(
      as_accurate_as_eager(1.15e-4, 1.15e-4));       // issue 48: rotary with FMA, as far as eager
  EXPECT_TRUE(as_accurate_as_eager(1e-7, 1.15e-4));  // closer to the oracle than eager
  EXPECT_TRUE(as_accurate_as_eager(0, 1e-7));        // exact
  EXPECT_TRUE(as_accurate_as_eager(2e-6, 1e-6));     // the bound itself
  EXPECT_FALSE(as_accurate_as_eager(2.01e-6, 1e-6));
  EXPECT_FALSE(as_accurate_as_eager(3e-3, 1e-7));    // a precision bug: far from the oracle
  EXPECT_TRUE(as_accurate_as_eager(3e-6, 1e-6, 4));  // another factor
}

TEST(AsAccurateAsEager, NeverWhereEagerIsExactOrAnErrorIsNotFinite) {
  EXPECT_FALSE(as_accurate_as_eager(0, 0));  // eager exact: nothing to be as accurate as
  EXPECT_FALSE(as_accurate_as_eager(1e-9, 0));
  EXPECT_FALSE(as_accurate_as_eager(NAN, 1e-6));
  EXPECT_FALSE(as_accurate_as_eager(INFINITY, 1e-6));
  EXPECT_FALSE(as_accurate_as_eager(1e-6, NAN));
  EXPECT_FALSE(as_accurate_as_eager(1e-6, INFINITY));
  EXPECT_FALSE(as_accurate_as_eager(1e-6, -1e-6));
}

TEST(AsAccurateAsEager, OnlyElementwiseRulesAreTolerances) {
  EXPECT_TRUE(elementwise_rule(Reason::allclose));
  EXPECT_TRUE(elementwise_rule(Reason::eager_relative));
  for (Reason r : {Reason::conditioned, Reason::ref_ratio, Reason::ulp, Reason::index,
                   Reason::memory, Reason::nan_contract, Reason::fault, Reason::none})
    EXPECT_FALSE(elementwise_rule(r)) << reason_name(r);
}

// A measurement whose kernel fails `rule` with these errors against the oracle (the runner's).
Measurement failing(RuleKind rule, double kernel_vs_oracle, double eager_vs_oracle) {
  Measurement m = clean();
  m.vs_oracle.elements = 100;  // the oracle was measured
  m.vs_oracle.max_abs = kernel_vs_oracle;
  m.reference_vs_oracle_max_abs = eager_vs_oracle;
  if (rule == RuleKind::allclose) {
    m.allclose_worst = 2.17;
    m.vs_reference.mismatches = 5;
  } else {
    m.relative_worst = 2.17;
    m.relative_mismatches = 5;
  }
  return m;
}

TEST(AsAccurateAsEager, TheFailureMessageSaysSoAndNamesTheFix) {
  for (RuleKind kind : {RuleKind::allclose, RuleKind::eager_relative}) {
    RuleConfig rule;
    rule.kind = kind;
    rule.tolerance = {1e-5, 1.3e-6};
    const auto v = evaluate(rule, failing(kind, 1.15e-4, 1.15e-4), DType::f32);
    EXPECT_EQ(v.outcome, Outcome::failed);  // the verdict stands
    EXPECT_EQ(v.rule, kind);
    EXPECT_NE(v.message.find("5 of 100 elements"), std::string::npos)
        << v.message;  // the rule's own first
    EXPECT_NE(
        v.message.find(
            "; yet the kernel is as accurate as eager against the float64 oracle (max abs error "
            "0.000115, eager's 0.000115, within 2x)"),
        std::string::npos)
        << v.message;
    EXPECT_NE(v.message.find("declare the op's `conditioning`"), std::string::npos) << v.message;
    EXPECT_NE(v.message.find("`magnitude`"), std::string::npos) << v.message;
    EXPECT_NE(v.message.find(kConditioningDocs), std::string::npos) << v.message;
    EXPECT_EQ(v.message, evaluate(rule, failing(kind, 1.15e-4, 1.15e-4), DType::f32).message);
  }
}

TEST(AsAccurateAsEager, NoNoteForAKernelFarFromTheOracleNorForOtherRules) {
  RuleConfig rule;
  rule.tolerance = {1e-5, 1.3e-6};
  // Far from the oracle (a precision bug): the rule's message alone.
  auto v = evaluate(rule, failing(RuleKind::allclose, 3e-3, 1e-7), DType::f32);
  EXPECT_EQ(v.outcome, Outcome::failed);
  EXPECT_EQ(v.message.find("as accurate as eager"), std::string::npos) << v.message;
  // The oracle not measured (checked timing judges allclose against eager alone): nothing said.
  auto m = failing(RuleKind::allclose, 1e-7, 1e-7);
  m.vs_oracle.elements = 0;
  EXPECT_EQ(evaluate(rule, m, DType::f32).message.find("as accurate as eager"), std::string::npos);
  // A passing case says nothing.
  m = failing(RuleKind::allclose, 1e-7, 1e-7);
  m.allclose_worst = 0.5;
  m.vs_reference.mismatches = 0;
  v = evaluate(rule, m, DType::f32);
  EXPECT_EQ(v.outcome, Outcome::passed);
  EXPECT_TRUE(v.message.empty()) << v.message;
  // Memory and NaN-contract failures are the kernel's whatever its errors.
  m = failing(RuleKind::allclose, 1e-7, 1e-7);
  m.vs_reference.unwritten = 3;
  EXPECT_EQ(evaluate(rule, m, DType::f32).message.find("as accurate as eager"), std::string::npos);
  m = failing(RuleKind::allclose, 1e-7, 1e-7);
  m.vs_reference.nan_mismatches = 1;
  EXPECT_EQ(evaluate(rule, m, DType::f32).message.find("as accurate as eager"), std::string::npos);
  // ulp and conditioned are not tolerances a conditioning fixes (conditioned is that fix).
  for (RuleKind kind : {RuleKind::ulp, RuleKind::conditioned}) {
    RuleConfig other;
    other.kind = kind;
    m = failing(RuleKind::eager_relative, 1e-7, 1e-7);
    m.max_ulp = 100;
    v = evaluate(other, m, DType::f32);
    EXPECT_EQ(v.outcome, Outcome::failed) << rule_name(kind);
    EXPECT_EQ(v.message.find("as accurate as eager"), std::string::npos) << v.message;
  }
}

TEST(AsAccurateAsEager, ACaseOfSeveralOutputsNotesTheFailingOnesErrors) {
  OutputMeasurement y = output("y", 0.5), z = output("z", 3, 2);
  y.measurement.vs_oracle.elements = z.measurement.vs_oracle.elements = 100;
  y.measurement.vs_oracle.max_abs = 1e-3;  // y is far from the oracle but passes
  z.measurement.vs_oracle.max_abs = 1.5e-6;
  z.measurement.reference_vs_oracle_max_abs = 1e-6;
  const auto v = judge_case({y, z});
  EXPECT_EQ(v.verdict.outcome, Outcome::failed);
  EXPECT_EQ(v.verdict.message.rfind("output 'z': 2 of 100", 0), 0u) << v.verdict.message;
  EXPECT_NE(v.verdict.message.find("(max abs error 1.5e-06, eager's 1e-06, within 2x)"),
            std::string::npos)
      << v.verdict.message;
}

// A report's case (CaseResult) that failed a tolerance while as accurate as eager.
CaseResult failed_case(Reason rule, double kernel_vs_oracle, double eager_vs_oracle, int64_t n) {
  CaseResult r;
  r.kcase.op = "matmul";
  r.kcase.dtype = DType::f32;
  r.kcase.dims = {{"M", n}, {"N", n}, {"K", 64}};
  r.outcome = Outcome::failed;
  r.rule = rule;
  r.vs_oracle.elements = n * n;
  r.vs_oracle.max_abs = kernel_vs_oracle;
  r.reference_vs_oracle_max_abs = eager_vs_oracle;
  return r;
}

TEST(AsAccurateAsEager, AReportsFailedCase) {
  EXPECT_TRUE(failed_as_accurate_as_eager(failed_case(Reason::allclose, 1e-4, 1e-4, 4)));
  EXPECT_TRUE(failed_as_accurate_as_eager(failed_case(Reason::eager_relative, 1e-4, 1e-4, 4)));
  EXPECT_FALSE(failed_as_accurate_as_eager(failed_case(Reason::allclose, 1e-3, 1e-4, 4)));
  EXPECT_FALSE(failed_as_accurate_as_eager(failed_case(Reason::conditioned, 1e-4, 1e-4, 4)));
  EXPECT_FALSE(failed_as_accurate_as_eager(failed_case(Reason::memory, 1e-4, 1e-4, 4)));
  auto r = failed_case(Reason::allclose, 1e-4, 1e-4, 4);
  r.outcome = Outcome::passed;
  EXPECT_FALSE(failed_as_accurate_as_eager(r));
  r = failed_case(Reason::allclose, 1e-4, 1e-4, 4);
  r.vs_oracle.elements = 0;  // not measured
  EXPECT_FALSE(failed_as_accurate_as_eager(r));
}

// Shrinking to one element can leave eager exact by luck: the minimal case then names the case
// it was shrunk from, where the kernel is as accurate as eager.
TEST(AsAccurateAsEager, AMinimalCaseNamesTheCaseItWasShrunkFrom) {
  const CaseResult from = failed_case(Reason::eager_relative, 5.5e-3, 9.1e-3, 42);
  const CaseResult lucky = failed_case(Reason::eager_relative, 4e-4, 6.7e-5, 1);  // 6x: eager lucky
  const std::string note = shrunk_from_note(from, lucky);
  EXPECT_EQ(
      note.rfind(
          "; shrunk from case " + from.kcase.id() +
              ", where the kernel is as accurate as eager against the float64 oracle (max abs "
              "error 0.0055, eager's 0.0091, within 2x): most likely a tolerance too tight",
          0),
      0u)
      << note;
  EXPECT_NE(note.find(kConditioningDocs), std::string::npos) << note;
  // The minimal case says so itself, or it was not shrunk from such a case, or it fails otherwise:
  // nothing added.
  EXPECT_EQ(shrunk_from_note(from, failed_case(Reason::eager_relative, 1e-4, 1e-4, 1)), "");
  EXPECT_EQ(shrunk_from_note(failed_case(Reason::eager_relative, 5e-2, 1e-4, 42), lucky), "");
  EXPECT_EQ(shrunk_from_note(from, failed_case(Reason::memory, 4e-4, 6.7e-5, 1)), "");
  CaseResult passed = lucky;
  passed.outcome = Outcome::passed;
  EXPECT_EQ(shrunk_from_note(from, passed), "");
}

// The rule registry: each rule once, named as its reason, parsed back to itself when a user may
// choose it; a reason that is no rule has no entry.
TEST(RuleRegistry, EveryRuleRoundTripsThroughItsName) {
  const auto& registry = rule_registry();
  ASSERT_EQ(registry.size(), 6u);
  std::set<Reason> seen;
  for (const RuleSpec& spec : registry) {
    const std::string name = reason_name(spec.kind);
    EXPECT_TRUE(seen.insert(spec.kind).second) << name << " twice";
    EXPECT_EQ(&rule_spec(spec.kind), &spec);
    EXPECT_EQ(rule_name(spec.kind), name);
    ASSERT_TRUE(find_reason(name).has_value()) << name;
    EXPECT_EQ(*find_reason(name), spec.kind);
    ASSERT_TRUE(spec.judge != nullptr && spec.eager_allowance != nullptr) << name;
    if (spec.choosable) {
      EXPECT_EQ(parse_rule(name), spec.kind);
      EXPECT_TRUE(chosen_rule(spec.kind)) << name;
    } else {
      EXPECT_THROW(parse_rule(name), Error) << name;
      EXPECT_FALSE(chosen_rule(spec.kind)) << name;
    }
    // A rule's verdict gives the rule as its reason.
    RuleConfig rule;
    rule.kind = spec.kind;
    EXPECT_EQ(evaluate(rule, clean(), DType::f32).rule, spec.kind) << name;
  }
  EXPECT_EQ(rule_names(), (std::vector<std::string>{"allclose", "ulp", "ref_ratio",
                                                    "eager_relative", "conditioned"}));
  for (Reason r : {Reason::memory, Reason::fault, Reason::none, Reason::wrong_while_timed}) {
    EXPECT_FALSE(chosen_rule(r)) << reason_name(r);
    EXPECT_THROW(rule_spec(r), Error) << reason_name(r);
  }
}

TEST(RuleRegistry, AnUnknownRuleIsRefusedWithTheRegistrysList) {
  try {
    parse_rule("allclos");
    FAIL() << "an unknown rule was taken";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "unknown correctness rule 'allclos': expected " + rule_list());
  }
  // A config's "rule" takes the names it is given (correctness::rule_names() in kgate) and lists
  // them when it refuses one.
  const auto config = nlohmann::json::parse(R"({"format": "kgate-config/1",
                                                "ops": {"softmax": {"rule": "index"}}})");
  try {
    parse_config(config, "cfg.json", rule_names());
    FAIL() << "index was taken as a config's rule";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cfg.json: ops.softmax.rule: expected \"allclose\", \"ulp\", \"ref_ratio\", "
              "\"eager_relative\" or \"conditioned\", found \"index\"");
  }
  const std::vector<std::string> two = {"allclose", "ulp"};
  EXPECT_EQ(parse_config(nlohmann::json::parse(R"({"format": "kgate-config/1",
                                                   "global": {"rule": "ulp"}})"),
                         "cfg.json", two)
                .global.rule,
            "ulp");
  EXPECT_THROW(parse_config(nlohmann::json::parse(R"({"format": "kgate-config/1",
                                                      "global": {"rule": "ref_ratio"}})"),
                            "cfg.json", two),
               Error);
}

// The op file schema lists the rules an op file may name: the registry's, in its order, and says
// them as rule_list() does.
TEST(RuleRegistry, TheOpFileSchemaListsTheRegistrysRules) {
  std::ifstream f(std::string(KGATE_SOURCE_DIR) + "/core/kgate-op.schema.json");
  ASSERT_TRUE(f.good());
  const auto schema = nlohmann::json::parse(f);
  const auto& rule = schema.at("properties").at("rule");
  EXPECT_EQ(rule.at("enum").get<std::vector<std::string>>(), rule_names())
      << "core/kgate-op.schema.json's properties.rule.enum differs from the rule registry "
         "(gates/correctness/registry.cpp): list the registry's choosable rules";
  EXPECT_EQ(rule.at("x-expected").get<std::string>().rfind(rule_list() + " (", 0), 0u)
      << "properties.rule.x-expected should start with \"" << rule_list() << " (\"";
}

// The tolerance against eager that implies each rule (checked timing clears a timed launch
// within it without the oracle), on known numbers.
TEST(RuleRegistry, EagerAllowancesImplyTheirRule) {
  RuleConfig rule;
  rule.tolerance = {1e-5, 1.3e-6};
  rule.max_ulp = 4;
  rule.ratio_k = 3;
  rule.ratio_floor = 1e-7;
  const double eps = dtype_eps(DType::f32);
  rule.kind = RuleKind::allclose;
  EXPECT_EQ(eager_allowance(rule, DType::f32).rtol, 1.3e-6);
  EXPECT_EQ(eager_allowance(rule, DType::f32).atol, 1e-5);
  rule.kind = RuleKind::eager_relative;
  EXPECT_DOUBLE_EQ(eager_allowance(rule, DType::f32).rtol, 2 * eps / 2);
  EXPECT_EQ(eager_allowance(rule, DType::f32).atol, 1e-5);
  rule.kind = RuleKind::conditioned;
  EXPECT_DOUBLE_EQ(eager_allowance(rule, DType::f32).rtol, 2 * eps / 2);
  rule.kind = RuleKind::ulp;
  EXPECT_DOUBLE_EQ(eager_allowance(rule, DType::f32).rtol, 4 * eps / 2);
  EXPECT_EQ(eager_allowance(rule, DType::f32).atol, 0);
  rule.kind = RuleKind::ref_ratio;
  EXPECT_EQ(eager_allowance(rule, DType::f32).atol, 1e-7);
  EXPECT_EQ(eager_allowance(rule, DType::f32).rtol, 0);
  rule.kind = RuleKind::index;
  EXPECT_EQ(eager_allowance(rule, DType::i64).atol, 0);
  EXPECT_EQ(eager_allowance(rule, DType::i64).rtol, 0);
  // What each rule has the runtime measure on the device.
  EXPECT_FALSE(rule_needs(RuleKind::allclose, Reduction::oracle));
  EXPECT_FALSE(rule_needs(RuleKind::ulp, Reduction::oracle));
  EXPECT_TRUE(rule_needs(RuleKind::ref_ratio, Reduction::oracle));
  EXPECT_FALSE(rule_needs(RuleKind::ref_ratio, Reduction::relative));
  EXPECT_TRUE(rule_needs(RuleKind::eager_relative, Reduction::relative));
  EXPECT_FALSE(rule_needs(RuleKind::eager_relative, Reduction::magnitude));
  EXPECT_TRUE(rule_needs(RuleKind::conditioned, Reduction::magnitude));
  EXPECT_TRUE(rule_needs(RuleKind::index, Reduction::index));
  EXPECT_FALSE(rule_needs(RuleKind::index, Reduction::oracle));
}

}  // namespace
}  // namespace kgate::correctness
