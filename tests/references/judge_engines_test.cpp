// The judge's one pass (runtime/cuda/judge_stats.hpp) against the ATen operators it restates: for
// every built-in op, a few generated cases of each of its dtypes, and outputs made from the eager
// reference's (exact, off by rounding noise, one element far off, NaN, infinities of either sign,
// the dtype's largest values, elements left holding the poison, zeros, a sweep of rtols), both
// engines must give the same verdict to the bit: outcome, rule, observed, allowed, margin,
// message, every error statistic, the needed atols and the output fingerprint. On the CPU here;
// on a GPU (SKIPPED without one) the device pass against the device's ATen operators.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "gates/correctness/rules.hpp"
#include "gates/props/generators.hpp"
#include "references/catalogue.hpp"
#include "references/op_reference.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/cuda/judge_stats.hpp"
#include "runtime/kernel.hpp"
#include "runtime/pipeline.hpp"
#include "runtime/runner.hpp"
#include "runtime/runner_internal.hpp"

namespace kgate {
namespace {

using runner_internal::JudgeEngine;

// Doubles compared by their bits (NaN equal to the same NaN, 0 not equal to -0).
bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::string describe(const ErrorStats& s) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "max_abs %a max_rel %a mismatches %lld elements %lld nan %lld unwritten %lld",
                s.max_abs, s.max_rel, static_cast<long long>(s.mismatches),
                static_cast<long long>(s.elements), static_cast<long long>(s.nan_mismatches),
                static_cast<long long>(s.unwritten));
  return buf;
}

// Everything a verdict carries, as text with the doubles' exact bits.
std::string describe(const CaseResult& r) {
  std::string s = std::string(outcome_name(r.outcome)) + " " + reason_name(r.rule);
  char buf[256];
  std::snprintf(buf, sizeof buf, " observed %a allowed %a margin %a ref_vs_oracle %a", r.observed,
                r.allowed, r.margin, r.reference_vs_oracle_max_abs);
  s += buf;
  s += "\n  message: " + r.message;
  s += "\n  vs_reference: " + describe(r.vs_reference);
  s += "\n  vs_oracle: " + describe(r.vs_oracle);
  s += "\n  needed_atol:";
  for (double a : r.needed_atol) {
    std::snprintf(buf, sizeof buf, " %a", a);
    s += buf;
  }
  s += "\n  fingerprint: " + std::to_string(r.output_fingerprint);
  s += std::string("\n  guards ") + (r.guard_bands_intact ? "intact" : "broken") + ", inputs " +
       (r.inputs_modified ? "modified" : "intact");
  return s;
}

enum class Mutation { exact, noise, far, nan, pos_inf, neg_inf, largest, poison, zeros };
const char* mutation_name(Mutation m) {
  switch (m) {
    case Mutation::exact:
      return "exact";
    case Mutation::noise:
      return "noise";
    case Mutation::far:
      return "far";
    case Mutation::nan:
      return "nan";
    case Mutation::pos_inf:
      return "pos_inf";
    case Mutation::neg_inf:
      return "neg_inf";
    case Mutation::largest:
      return "largest";
    case Mutation::poison:
      return "poison";
    case Mutation::zeros:
      return "zeros";
  }
  return "?";
}
constexpr Mutation kMutations[] = {Mutation::exact,   Mutation::noise,   Mutation::far,
                                   Mutation::nan,     Mutation::pos_inf, Mutation::neg_inf,
                                   Mutation::largest, Mutation::poison,  Mutation::zeros};
constexpr uint64_t kPoisonSalt = 0x5eed;

// A kernel's output made from the reference's: every 7th element (and the first and last)
// changed as `m` says.
at::Tensor mutate(const at::Tensor& reference, Mutation m, uint64_t seed) {
  at::Tensor out = reference.clone();
  if (out.numel() == 0 || m == Mutation::exact) return out;
  const bool floating = out.is_floating_point();
  auto flat = out.view({-1});
  const int64_t n = flat.numel();
  auto picked = at::arange(0, n, 7, at::TensorOptions().dtype(at::kLong).device(out.device()));
  picked = at::cat({picked, at::full({1}, n - 1, picked.options())});
  const DType dtype = from_scalar_type(out.scalar_type());
  switch (m) {
    case Mutation::noise: {
      if (!floating) {
        flat.index_put_({picked}, flat.index({picked}) + 1);
        break;
      }
      auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
      const auto noise =
          at::randn({n}, gen, at::TensorOptions().dtype(at::kDouble)).to(out.device());
      flat.copy_((flat.to(at::kDouble) * (1 + 1e-3 * noise)).to(out.scalar_type()));
      break;
    }
    case Mutation::far:
      flat.index_put_({picked.narrow(0, 0, 1)}, floating ? at::full({1}, 3.0, flat.options())
                                                         : at::full({1}, 2, flat.options()));
      break;
    case Mutation::nan:
    case Mutation::pos_inf:
    case Mutation::neg_inf:
    case Mutation::largest: {
      if (!floating) return out;
      const double v = m == Mutation::nan       ? NAN
                       : m == Mutation::pos_inf ? INFINITY
                       : m == Mutation::neg_inf ? -INFINITY
                                                : dtype_max(dtype);
      flat.index_put_({picked}, at::full({picked.numel()}, v, flat.options()));
      break;
    }
    case Mutation::poison: {
      auto bits = flat.view(runner_internal::bits_type(dtype));
      bits.index_put_(
          {picked},
          runner_internal::poison_bits(dtype, out.device(), kPoisonSalt).expand({picked.numel()}));
      break;
    }
    case Mutation::zeros:
      flat.zero_();
      break;
    case Mutation::exact:
      break;
  }
  return out;
}

// One case's verdict under `engine` and `rule_name` ("": the op's rule for the dtype).
CaseResult judge(const OpSignature& op, const Case& c, const Tensors& inputs,
                 const Tensors& outputs, JudgeEngine engine, const std::vector<double>& sweep,
                 at::Device device, const std::string& rule_name = "") {
  runner_internal::set_judge_engine(engine);
  const OpReference& ref = op_reference(op.name);
  CheckOptions options;
  options.rule = rule_name;
  const auto rule = rule_for(op, c.dtype, options);
  runner_internal::DeviceScalars q;
  runner_internal::MemorySlots memory;
  CaseResult result;
  result.kcase = c;
  runner_internal::judge_outputs(
      op, ref, c, rule, call_attributes(op, c), inputs, outputs, q, memory, kPoisonSalt, false,
      runner_internal::output_starts(op, nullptr), device, sweep, result, true);
  runner_internal::set_judge_engine(std::nullopt);
  return result;
}

// Every built-in op's cases through both engines on `device`; returns how many verdicts agreed.
int64_t compare_engines(at::Device device) {
  int64_t compared = 0, failing = 0;
  std::map<std::string, int64_t> outcomes;
  const std::vector<double> sweep = {1e-2, 1e-3, 1e-5, 0};
  for (const auto& op : op_catalogue()) {
    if (!op.origin.empty() && op.origin != "built-in") continue;
    props::GeneratorOptions gen;
    gen.seed = 11;
    gen.cases = 12;
    gen.max_elements = 1 << 16;
    props::KernelTraits traits;
    std::vector<Case> cases;
    try {
      cases = props::generate_cases(op, traits, gen);
    } catch (const std::exception& e) {
      ADD_FAILURE() << op.name << ": cases: " << e.what();
      continue;
    }
    for (const auto& c : cases) {
      if (props::is_huge(op, c)) continue;
      const OpReference& ref = op_reference(op.name);
      const Tensors inputs = case_inputs(ref, c, op, device);
      Tensors expected;
      try {
        expected = ref.eager(inputs, call_attributes(op, c));
      } catch (const std::exception&) {
        continue;  // a reference error is judged before either engine runs
      }
      for (Mutation m : kMutations) {
        Tensors outputs;
        for (size_t i = 0; i < expected.size() && i < op.outputs.size(); ++i)
          outputs.push_back(mutate(expected[i], m, c.seed + i));
        const auto& sweep_here = m == Mutation::noise ? sweep : std::vector<double>{};
        // The op's rule, and each rule a command line may choose (its own reductions: the ULP
        // distance, the relative ratios, the oracle's errors).
        std::vector<std::string> rules = {""};
        for (const auto& r : correctness::rule_names()) rules.push_back(r);
        for (const auto& rule : rules) {
          CaseResult a, f;
          try {
            a = judge(op, c, inputs, outputs, JudgeEngine::aten, sweep_here, device, rule);
          } catch (const Error&) {
            runner_internal::set_judge_engine(std::nullopt);
            continue;  // a rule this op cannot take (said by rule_for)
          }
          f = judge(op, c, inputs, outputs, JudgeEngine::fused, sweep_here, device, rule);
          const std::string da = describe(a), df = describe(f);
          ++compared;
          ++outcomes[std::string(outcome_name(a.outcome)) + " " + reason_name(a.rule)];
          if (da != df && ++failing <= 10)
            ADD_FAILURE() << op.name << " case " << c.id() << " (" << mutation_name(m) << ", rule '"
                          << rule << "'): the engines differ\n aten:  " << da << "\n fused: " << df;
        }
      }
    }
  }
  for (const auto& [what, n] : outcomes)
    std::printf("  %6lld %s\n", static_cast<long long>(n), what.c_str());
  return compared;
}

TEST(JudgeEngines, TheOnePassGivesTheVerdictsOfTheAtenOperatorsOnTheCpu) {
  const int64_t compared = compare_engines(at::kCPU);
  EXPECT_GT(compared, 500) << "too few verdicts compared to mean anything";
  std::printf("compared %lld verdicts\n", static_cast<long long>(compared));
}

TEST(JudgeEngines, TheOnePassGivesTheVerdictsOfTheAtenOperatorsOnTheGpu) {
  std::string why;
  if (!cuda::device_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  const int64_t compared = compare_engines(at::Device(at::kCUDA, 0));
  EXPECT_GT(compared, 500) << "too few verdicts compared to mean anything";
  std::printf("compared %lld verdicts\n", static_cast<long long>(compared));
}

// Whole cases of real kernels (Runner::check_case: the memory checks after the launch too), correct
// ones and mutants that leave outputs unwritten, write into their input or past their output's
// end: each case's verdict under both engines, on one runner (one poison salt).
int64_t compare_kernels(Backend backend, const std::vector<std::string>& names) {
  Runner runner(backend);
  int64_t compared = 0, failing = 0;
  std::map<std::string, int64_t> outcomes;
  for (const auto& name : names) {
    const KernelInfo& kernel = find_kernel(name);
    const OpSignature& op = find_op(kernel.op);
    props::GeneratorOptions gen;
    gen.seed = 5;
    gen.cases = 24;
    gen.max_elements = 1 << 16;
    CheckOptions options;
    for (const auto& c : props::generate_cases(op, traits_of(kernel), gen)) {
      if (props::is_huge(op, c)) continue;
      const auto rule = rule_for(op, c.dtype, options, kernel.name);
      runner_internal::set_judge_engine(JudgeEngine::aten);
      const CaseResult a = runner.check_case(kernel, c, rule);
      runner_internal::set_judge_engine(JudgeEngine::fused);
      const CaseResult f = runner.check_case(kernel, c, rule);
      runner_internal::set_judge_engine(std::nullopt);
      ++compared;
      ++outcomes[name + ": " + outcome_name(a.outcome) + " " + reason_name(a.rule)];
      const std::string da = describe(a), df = describe(f);
      if (da != df && ++failing <= 10)
        ADD_FAILURE() << name << " case " << c.id() << ": the engines differ\n aten:  " << da
                      << "\n fused: " << df;
    }
  }
  for (const auto& [what, n] : outcomes)
    std::printf("  %6lld %s\n", static_cast<long long>(n), what.c_str());
  return compared;
}

TEST(JudgeEngines, WholeCasesOfRealKernelsGetTheSameVerdictsOnTheCpu) {
  const int64_t compared = compare_kernels(
      Backend::cpu, {"softmax_cpu", "mutant_softmax_cpu_tail_dropped",
                     "mutant_softmax_cpu_writes_input", "mutant_softmax_cpu_write_past_end"});
  EXPECT_GE(compared, 80);
}

TEST(JudgeEngines, WholeCasesOfRealKernelsGetTheSameVerdictsOnTheGpu) {
  std::string why;
  if (!cuda::device_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  const int64_t compared = compare_kernels(
      Backend::cuda, {"softmax_block", "rms_norm_block", "mutant_softmax_tail_dropped",
                      "mutant_silu_and_mul_write_past_end", "mutant_gelu_writes_input"});
  EXPECT_GE(compared, 100);
}

// A verdict that each engine reaches differently would show above; this one shows that the
// comparison can fail: a fused verdict of other outputs is not the aten one of these.
TEST(JudgeEngines, TheComparisonSeesADifferentVerdict) {
  const OpSignature& op = find_op("softmax");
  props::GeneratorOptions gen;
  gen.seed = 3;
  gen.cases = 4;
  gen.max_elements = 1 << 12;
  const auto cases = props::generate_cases(op, props::KernelTraits{}, gen);
  ASSERT_FALSE(cases.empty());
  const Case& c = cases.front();
  const OpReference& ref = op_reference(op.name);
  const Tensors inputs = case_inputs(ref, c, op, at::kCPU);
  const Tensors expected = ref.eager(inputs, call_attributes(op, c));
  const Tensors good = {mutate(expected[0], Mutation::exact, 1)};
  const Tensors bad = {mutate(expected[0], Mutation::far, 1)};
  const auto a = judge(op, c, inputs, good, JudgeEngine::aten, {}, at::kCPU);
  const auto f = judge(op, c, inputs, bad, JudgeEngine::fused, {}, at::kCPU);
  EXPECT_NE(describe(a), describe(f));
  EXPECT_EQ(a.outcome, Outcome::passed);
  EXPECT_EQ(f.outcome, Outcome::failed);
}

// The pass's own figures on values worked out by hand: a ratio of exactly 1 passes, NaN against
// NaN and an infinity against the same infinity are no mismatch, the worst element is the first
// of equal ratios, the ULP distance crosses zero, one-byte poison counts only where the reference
// differs, and the fingerprint weights each element by its position.
TEST(JudgeStats, FiguresWorkedOutByHand) {
  namespace js = cuda::judge;
  const float out[] = {1.0f, 3.0f, NAN, INFINITY, -INFINITY, 3.0f, -0.0f, 1e-45f};
  const float ref[] = {0.0f, 0.0f, NAN, INFINITY, INFINITY, 0.0f, 0.0f, -1e-45f};
  js::OutputJob job;
  job.count = 8;
  job.out = {out, js::ElemType::f32};
  job.expected = {ref, js::ElemType::f32};
  job.oracle = job.expected;
  job.atol = 1;
  job.rtol = 0;
  job.ulp = true;
  job.fingerprint = true;
  job.fingerprint_offset = 1;
  js::OutputStats s;
  js::judge_stats_host({job}, &s);
  EXPECT_EQ(s.ref_max_abs, 3.0);       // element 1 (and 5)
  EXPECT_EQ(s.ref_mismatches, 2);      // ratios 1, 3, 0, 0, 0, 3, 0, ~0: 1 passes
  EXPECT_EQ(s.ref_nan_mismatches, 1);  // -inf against inf
  EXPECT_EQ(s.worst_ratio, 3.0);
  EXPECT_EQ(s.worst_index, 1);  // the first of the two 3s
  EXPECT_EQ(s.worst_out, 3.0);
  EXPECT_EQ(s.worst_target, 0.0);
  EXPECT_EQ(s.max_ulp,
            0x40400000);  // 3.0f against 0.0f; -0 against 0 is 0, 1e-45 against -1e-45 is 2
  int64_t fp = 0;
  for (int k = 0; k < 8; ++k) {
    int32_t bits;
    std::memcpy(&bits, &out[k], 4);
    fp += static_cast<int64_t>(bits) * (k * int64_t{2654435761} + 1);
  }
  EXPECT_EQ(s.fingerprint, fp);

  // One-byte poison (int8's -128): unwritten only where the reference holds another value.
  const int8_t q_out[] = {-128, -128, 5, -128};
  const int8_t q_ref[] = {-128, 7, 5, 0};
  js::OutputJob q;
  q.count = 4;
  q.out = {q_out, js::ElemType::i8};
  q.expected = {q_ref, js::ElemType::i8};
  q.oracle = q.expected;
  q.unwritten = true;
  q.poison = -128;
  q.poison_where_expected_differs = true;
  js::judge_stats_host({q}, &s);
  EXPECT_EQ(s.unwritten, 2);
  EXPECT_EQ(s.ref_mismatches, 2);  // exact: any difference has an infinite ratio
  EXPECT_EQ(s.worst_ratio, INFINITY);
  EXPECT_EQ(s.worst_index, 1);
  q.poison_where_expected_differs = false;
  js::judge_stats_host({q}, &s);
  EXPECT_EQ(s.unwritten, 3);
}

// An output's poison is one fill of its bits with the pattern (make_output): for every dtype and
// many salts, the same bits as the pattern's one-element tensor, a fill that never overflows the
// bits' integer type, and for a floating dtype a NaN.
TEST(JudgeStats, ThePoisonFillIsThePatternsBits) {
  for (DType dtype : all_dtypes()) {
    for (uint64_t salt = 1; salt < 2000; salt += 37) {
      const auto bits = runner_internal::bits_type(dtype);
      const auto filled = at::empty({3}, at::TensorOptions().dtype(bits))
                              .fill_(runner_internal::poison_pattern(dtype, salt));
      const auto want = runner_internal::poison_bits(dtype, at::kCPU, salt).expand({3});
      ASSERT_TRUE(at::equal(filled, want)) << dtype_name(dtype) << " salt " << salt;
      if (is_floating(dtype))  // a NaN of the dtype, whatever the salt
        ASSERT_TRUE(filled.view(to_scalar_type(dtype)).to(at::kDouble).isnan().all().item<bool>())
            << dtype_name(dtype) << " salt " << salt;
    }
  }
}

// The narrow formats read exactly: every f16, bf16 and e4m3 bit pattern against c10's conversion.
TEST(JudgeStats, NarrowFormatsReadAsTorchReadsThem) {
  for (const auto type : {at::kHalf, at::kBFloat16, at::kFloat8_e4m3fn}) {
    const int64_t n = type == at::kFloat8_e4m3fn ? 256 : 65536;
    const auto bits = at::arange(n, at::kLong);
    const auto raw = type == at::kFloat8_e4m3fn ? bits.to(at::kByte).view(type)
                                                : bits.to(at::kInt).to(at::kShort).view(type);
    const auto want = raw.to(at::kDouble);
    namespace js = cuda::judge;
    js::OutputJob job;
    job.count = n;
    job.out = {raw.const_data_ptr(), type == at::kHalf       ? js::ElemType::f16
                                     : type == at::kBFloat16 ? js::ElemType::bf16
                                                             : js::ElemType::f8e4m3};
    job.expected = {want.const_data_ptr(), js::ElemType::f64};
    job.oracle = job.expected;
    js::OutputStats s;
    js::judge_stats_host({job}, &s);
    // Equal everywhere: no difference, and NaN only against NaN.
    EXPECT_EQ(s.ref_max_abs, 0.0) << c10::toString(type);
    EXPECT_EQ(s.ref_nan_mismatches, 0) << c10::toString(type);
    EXPECT_EQ(s.ref_mismatches, 0) << c10::toString(type);
  }
}

}  // namespace
}  // namespace kgate
