// The new ops through the real Runner on the cpu backend (no GPU needed), with small f32 CPU
// kernels defined here: integer inputs (embedding indices, varlen offsets), shapes given by dim
// expressions ("2*H", "S+1"), sizes read from the call attributes (OH, OW), the exact tolerance of
// embedding, and Runner::check_stale — each verdict as the mutant suite will see it on the GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <numeric>
#include <vector>

#include "gates/props/generators.hpp"
#include "references/catalogue.hpp"
#include "runtime/pipeline.hpp"

namespace kgate {
namespace {

float at(const TensorView& t, int64_t offset) { return t.as<const float>()[offset]; }

// embedding: copies weight rows by index; `row_shift` 1 makes the classic off-by-one.
void embedding_copy(const KernelCall& call, int64_t row_shift) {
  const auto& w = call.inputs.at(0);
  const auto& idx = call.inputs.at(1);
  const auto& y = call.outputs.at(0);
  for (int64_t t = 0; t < idx.sizes[0]; ++t) {
    int64_t row = idx.as<const int64_t>()[t * idx.strides[0]] + row_shift;
    row = std::min(row, w.sizes[0] - 1);
    for (int64_t c = 0; c < w.sizes[1]; ++c)
      std::memcpy(y.as<float>() + t * y.strides[0] + c * y.strides[1],
                  w.as<const float>() + row * w.strides[0] + c * w.strides[1], sizeof(float));
  }
}

void pool(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t h = x.sizes[2], w = x.sizes[3];
  const auto oh = static_cast<int64_t>(call.attributes.at("OH"));
  const auto ow = static_cast<int64_t>(call.attributes.at("OW"));
  for (int64_t b = 0; b < x.sizes[0]; ++b)
    for (int64_t c = 0; c < x.sizes[1]; ++c)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          const int64_t h0 = i * h / oh, h1 = ((i + 1) * h + oh - 1) / oh;
          const int64_t w0 = j * w / ow, w1 = ((j + 1) * w + ow - 1) / ow;
          double sum = 0;
          for (int64_t r = h0; r < h1; ++r)
            for (int64_t s = w0; s < w1; ++s)
              sum +=
                  at(x, b * x.strides[0] + c * x.strides[1] + r * x.strides[2] + s * x.strides[3]);
          y.as<float>()[b * y.strides[0] + c * y.strides[1] + i * y.strides[2] + j * y.strides[3]] =
              static_cast<float>(sum / static_cast<double>((h1 - h0) * (w1 - w0)));
        }
}

void varlen(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& cu = call.inputs.at(1);
  const auto& y = call.outputs.at(0);
  const int32_t* o = cu.as<const int32_t>();
  for (int64_t s = 0; s + 1 < cu.sizes[0]; ++s) {
    double m = -INFINITY, sum = 0;
    for (int64_t i = o[s]; i < o[s + 1]; ++i) m = std::fmax(m, at(x, i * x.strides[0]));
    for (int64_t i = o[s]; i < o[s + 1]; ++i) sum += std::exp(at(x, i * x.strides[0]) - m);
    for (int64_t i = o[s]; i < o[s + 1]; ++i)
      y.as<float>()[i * y.strides[0]] =
          static_cast<float>(std::exp(at(x, i * x.strides[0]) - m) / sum);
  }
}

void silu_and_mul(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t h = y.sizes[1];
  for (int64_t r = 0; r < y.sizes[0]; ++r)
    for (int64_t j = 0; j < h; ++j) {
      const float a = at(x, r * x.strides[0] + j * x.strides[1]);
      const float b = at(x, r * x.strides[0] + (j + h) * x.strides[1]);
      y.as<float>()[r * y.strides[0] + j * y.strides[1]] = a / (1.f + std::exp(-a)) * b;
    }
}

// gelu that memoizes its output by shape: a stale-output mutant.
void gelu_memo(const KernelCall& call) {
  static std::vector<std::pair<std::vector<int64_t>, std::vector<float>>> memo;
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t n = y.numel();
  for (const auto& [shape, data] : memo)
    if (shape == x.sizes) {
      std::memcpy(y.data, data.data(), static_cast<size_t>(n) * sizeof(float));
      return;
    }
  for (int64_t r = 0; r < x.sizes[0]; ++r)
    for (int64_t c = 0; c < x.sizes[1]; ++c) {
      const float v = at(x, r * x.strides[0] + c * x.strides[1]);
      y.as<float>()[r * y.strides[0] + c * y.strides[1]] =
          v * 0.5f * (1.f + std::erf(v * 0.70710678118654752440f));
    }
  memo.emplace_back(x.sizes, std::vector<float>(y.as<const float>(), y.as<const float>() + n));
}

KernelInfo cpu_kernel(const char* name, const char* op, std::function<void(const KernelCall&)> fn) {
  KernelInfo k;
  k.name = name;
  k.op = op;
  k.backend = Backend::cpu;
  k.dtypes = {DType::f32};
  k.accepts_strided = true;
  k.launch = std::move(fn);
  return k;
}

Runner& cpu_runner() {
  static Runner runner(Backend::cpu);
  return runner;
}

// Runs `count` cases of every applicable family; returns the failures' messages.
std::vector<std::string> failures(const KernelInfo& k, int64_t count, int64_t* run,
                                  bool stale = false) {
  const auto& op = find_op(k.op);
  std::vector<std::string> out;
  for (const auto& family :
       props::applicable_families(op, props::KernelTraits{k.dtypes, {}, true, true}))
    for (const auto& c :
         props::generate_family(op, {k.dtypes, {}, true, true}, family, count, 5, 1 << 15)) {
      const auto rule = rule_for(op, c.dtype, CheckOptions{});
      ++*run;
      const auto r =
          stale ? cpu_runner().check_stale(k, c, rule) : cpu_runner().check_case(k, c, rule);
      if (r.outcome == Outcome::failed)
        out.push_back(c.id() + " [" + std::string(reason_name(r.rule)) + "] " + r.message);
    }
  return out;
}

TEST(OpsThroughTheRunner, CorrectCpuKernelsPass) {
  for (const auto& k :
       {cpu_kernel("embedding_copy", "embedding", [](auto& c) { embedding_copy(c, 0); }),
        cpu_kernel("pool", "adaptive_avg_pool2d", pool),
        cpu_kernel("varlen", "softmax_varlen", varlen),
        cpu_kernel("silu_and_mul", "silu_and_mul", silu_and_mul)}) {
    int64_t run = 0;
    const auto f = failures(k, 6, &run);
    // 6 cases of each of 5 families, and up to 6 long ones (those whose long rows fit 2^15
    // elements).
    EXPECT_GE(run, 30) << k.name;
    EXPECT_LE(run, 36) << k.name;
    EXPECT_TRUE(f.empty()) << k.name << ": " << f.size() << " failures, first: " << f.front();
  }
}

TEST(OpsThroughTheRunner, ExactToleranceRejectsAWrongRowAndPassesExactCopies) {
  const auto k =
      cpu_kernel("embedding_shifted", "embedding", [](auto& c) { embedding_copy(c, 1); });
  const auto& op = find_op("embedding");
  const Case c = Case::from_id("embedding:f32:T=6,V=4,D=3:contiguous:normal:0000000000000021");
  const auto r = cpu_runner().check_case(k, c, rule_for(op, c.dtype, CheckOptions{}));
  EXPECT_EQ(r.outcome, Outcome::failed);
  EXPECT_EQ(r.rule, Reason::allclose);
  EXPECT_TRUE(std::isinf(r.observed)) << r.observed;
  const auto good =
      cpu_kernel("embedding_exact", "embedding", [](auto& call) { embedding_copy(call, 0); });
  const auto ok = cpu_runner().check_case(good, c, rule_for(op, c.dtype, CheckOptions{}));
  EXPECT_EQ(ok.outcome, Outcome::passed) << ok.message;
  EXPECT_EQ(ok.observed, 0);  // 0 / 0 is a pass with margin 0, not NaN
}

TEST(OpsThroughTheRunner, StaleCheckCatchesAMemoizingKernel) {
  const auto k = cpu_kernel("gelu_memo", "gelu", gelu_memo);
  const auto& op = find_op("gelu");
  const Case c = Case::from_id("gelu:f32:B=3,N=17:contiguous:normal:0000000000000031");
  const auto rule = rule_for(op, c.dtype, CheckOptions{});
  EXPECT_EQ(cpu_runner().check_case(k, c, rule).outcome,
            Outcome::passed);  // first call of the shape
  Case d = c;
  d.set_dim("N", 18);
  const auto r = cpu_runner().check_stale(k, d, rule);
  EXPECT_EQ(r.outcome, Outcome::failed);
  EXPECT_EQ(r.rule, Reason::stale);
  EXPECT_EQ(r.kcase, d);
  EXPECT_NE(r.message.find("stale output"), std::string::npos) << r.message;
}

// gelu written as BLAS writes C = beta * C + f(x) (beta 0): it reads y before writing it, so the
// NaN poison makes every element NaN unless the kernel declares y's start value. `skip`: leaves
// the last element of each row alone; `count_dirty`: counts launches that found y not all zero.
void gelu_reading_y(const KernelCall& call, float beta, bool skip, int64_t* count_dirty) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  bool dirty = false;
  for (int64_t r = 0; r < x.sizes[0]; ++r)
    for (int64_t c = 0; c < x.sizes[1]; ++c) {
      float& out = y.as<float>()[r * y.strides[0] + c * y.strides[1]];
      dirty |= out != 0.f;
      if (skip && c + 1 == x.sizes[1]) continue;
      const float v = x.as<const float>()[r * x.strides[0] + c * x.strides[1]];
      out = beta * out + v * 0.5f * (1.f + std::erf(v * 0.70710678118654752440f));
    }
  if (count_dirty && dirty) ++*count_dirty;
}

TEST(OpsThroughTheRunner, AnOutputTheKernelReadsHoldsItsStartValue) {
  const auto& op = find_op("gelu");
  const Case c = Case::from_id("gelu:f32:B=3,N=17:contiguous:normal:0000000000000031");
  const auto rule = rule_for(op, c.dtype, CheckOptions{});
  KernelInfo k = cpu_kernel("gelu_beta", "gelu", [](const KernelCall& call) {
    gelu_reading_y(call, 0.f, false, nullptr);
  });
  // Without a start value: 0 * NaN is NaN, a correct kernel rejected.
  EXPECT_EQ(cpu_runner().check_case(k, c, rule).outcome, Outcome::failed);
  k.output_start = {{"y", 0.0}};
  const auto r = cpu_runner().check_case(k, c, rule);
  EXPECT_EQ(r.outcome, Outcome::passed) << r.message;
  EXPECT_EQ(cpu_runner().check_written_before(k, c, rule).outcome, Outcome::passed);
  Case d = c;
  d.set_dim("N", 18);
  EXPECT_EQ(cpu_runner().check_stale(k, d, rule).outcome, Outcome::passed);
  // Cases of the families whose values this plain formula takes (not the special values).
  for (const char* family : {"random", "ragged", "layout"})
    for (const auto& g :
         props::generate_family(op, {k.dtypes, {}, true, true}, family, 4, 5, 1 << 15)) {
      const auto result = cpu_runner().check_case(k, g, rule_for(op, g.dtype, CheckOptions{}));
      EXPECT_EQ(result.outcome, Outcome::passed) << g.id() << ": " << result.message;
    }

  // An element left at its start value where the reference differs is named.
  KernelInfo skip = cpu_kernel("gelu_skip", "gelu", [](const KernelCall& call) {
    gelu_reading_y(call, 0.f, true, nullptr);
  });
  skip.output_start = {{"y", 0.0}};
  const auto s = cpu_runner().check_case(skip, c, rule);
  EXPECT_EQ(s.outcome, Outcome::failed);
  EXPECT_NE(s.message.find("3 of 51 output elements still hold their start value 0 where the "
                           "reference holds another"),
            std::string::npos)
      << s.message;

  // A name that is no output of the op is the kernel's error, said before anything runs.
  KernelInfo wrong = k;
  wrong.output_start = {{"z", 0.0}};
  try {
    cpu_runner().check_case(wrong, c, rule);
    ADD_FAILURE() << "a start value for 'z' was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "gives a start value for 'z', which is not an output of op 'gelu'"),
              std::string::npos)
        << e.what();
  }
}

TEST(OpsThroughTheRunner, TimedLaunchesFindTheirStartValueEveryTime) {
  const Case c = Case::from_id("gelu:f32:B=4,N=256:contiguous:normal:0000000000000031");
  const auto& op = find_op("gelu");
  const auto rule = rule_for(op, c.dtype, CheckOptions{});
  static int64_t dirty = 0;
  KernelInfo k = cpu_kernel("gelu_strict", "gelu", [](const KernelCall& call) {
    gelu_reading_y(call, 0.f, false, &dirty);
  });
  k.output_start = {{"y", 0.0}};
  TimingOptions t;
  t.interleave.blocks_per_stage = 6;
  t.interleave.max_stages = 1;
  t.interleave.time_budget_s = 1;
  t.interleave.launches_per_arm = 2;
  t.max_warmup_batches = 2;
  dirty = 0;
  const auto timed = cpu_runner().time_case(k, nullptr, c, t, 1, &rule);
  EXPECT_FALSE(timed.candidate_ns.empty()) << timed.note;
  EXPECT_NE(timed.decision, Outcome::invalid) << timed.note;
  EXPECT_FALSE(timed.checked_launches.empty());
  EXPECT_EQ(dirty, 0);  // every launch, checked or not, found y at its start value
  // A kernel baseline runs in the same buffers; with no start value of its own it leaves them
  // written, and the candidate still finds its start value.
  const KernelInfo plain = cpu_kernel("gelu_plain", "gelu", [](const KernelCall& call) {
    const auto& x = call.inputs.at(0);
    const auto& y = call.outputs.at(0);
    for (int64_t i = 0; i < x.numel(); ++i) {  // contiguous: the case's layout
      const float v = x.as<const float>()[i];
      y.as<float>()[i] = v * 0.5f * (1.f + std::erf(v * 0.70710678118654752440f));
    }
  });
  const auto paired = cpu_runner().time_case(k, &plain, c, t, 2, &rule);
  EXPECT_NE(paired.decision, Outcome::invalid) << paired.note;
  EXPECT_EQ(dirty, 0);
}

// An op file with an output written in place (kgate-op/1 "alias"): s = x + r is stored into r, and
// y = 2 * s. A correct in-place kernel passes; one that leaves r alone, or that also writes x,
// fails.
const char* const kInPlaceOp = R"({
  "format": "kgate-op/1",
  "name": "add_in_place_test",
  "symbols": [{"name": "N", "min": 1, "max": 4096}],
  "inputs": [{"name": "x", "shape": ["N"]},
             {"name": "r", "shape": ["N"], "values": {"kind": "normal"}}],
  "outputs": [{"name": "y", "shape": ["N"]}, {"name": "r_out", "shape": ["N"], "alias": "r"}],
  "dtypes": ["f32"],
  "reduced": "N",
  "reference": "def reference(x: Tensor, r: Tensor) -> Tuple[Tensor, Tensor]:\n    s = x + r\n    return 2.0 * s, s\n"
})";

void add_in_place(const KernelCall& call, bool store, bool touch_x) {
  const auto& x = call.inputs.at(0);
  const auto& r = call.outputs.at(1);  // the same buffer as inputs[1]
  const auto& y = call.outputs.at(0);
  for (int64_t i = 0; i < x.sizes[0]; ++i) {
    const float s = x.as<const float>()[i * x.strides[0]] + r.as<float>()[i * r.strides[0]];
    y.as<float>()[i * y.strides[0]] = 2.0f * s;
    if (store) r.as<float>()[i * r.strides[0]] = s;
  }
  if (touch_x) const_cast<float*>(x.as<const float>())[0] += 1.0f;
}

TEST(OpsThroughTheRunner, OutputsWrittenInPlace) {
  const std::string path = ::testing::TempDir() + "/add_in_place_test.json";
  { std::ofstream(path) << kInPlaceOp; }
  load_op_files(path);
  ASSERT_EQ(find_op("add_in_place_test").alias_input(find_op("add_in_place_test").outputs[1]), 1);
  const auto kernel = [](const char* name, bool store, bool touch_x) {
    KernelInfo k = cpu_kernel(name, "add_in_place_test",
                              [=](const KernelCall& c) { add_in_place(c, store, touch_x); });
    k.dtypes = {DType::f32};
    return k;
  };
  int64_t run = 0;
  const auto good = failures(kernel("in_place_ok", true, false), 6, &run);
  EXPECT_TRUE(good.empty()) << ::testing::PrintToString(good);
  EXPECT_GT(run, 10);
  const auto lazy = failures(kernel("in_place_not_stored", false, false), 6, &run);
  ASSERT_FALSE(lazy.empty());
  EXPECT_NE(lazy.front().find("output 'r_out'"), std::string::npos) << lazy.front();
  const auto writes_x = failures(kernel("in_place_writes_x", true, true), 6, &run);
  ASSERT_FALSE(writes_x.empty());
  EXPECT_NE(writes_x.front().find("modified its input"), std::string::npos) << writes_x.front();
}

// Top-k with values and int64 indices (an `index_into` output): judged by the values the indices
// select, so ties may come in any order, but each index once and in range.
const char* const kTopkOp = R"({
  "format": "kgate-op/1",
  "name": "topk_test",
  "symbols": [{"name": "B", "min": 0, "max": 64, "typical_max": 8}, {"name": "N", "min": 1, "max": 512, "typical_max": 64},
              {"name": "K", "min": 1, "max": 8}],
  "relations": ["K <= N"],
  "inputs": [{"name": "x", "shape": ["B", "N"]}],
  "outputs": [{"name": "values", "shape": ["B", "K"]},
              {"name": "indices", "shape": ["B", "K"], "dtype": "i64", "index_into": "x"}],
  "dtypes": ["f32"],
  "reduced": "N",
  "reference": "def reference(x: Tensor, K: int) -> Tuple[Tensor, Tensor]:\n    return torch.topk(x, K, -1, True, True)\n"
})";

enum class TopkBug { none, ties_high_first, duplicate_index, out_of_range };

void topk_rows(const KernelCall& call, TopkBug bug) {
  const auto& x = call.inputs.at(0);
  const auto& v = call.outputs.at(0);
  const auto& ix = call.outputs.at(1);
  const int64_t n = x.sizes[1], k = v.sizes[1];
  for (int64_t b = 0; b < x.sizes[0]; ++b) {
    auto val = [&](int64_t j) { return at(x, b * x.strides[0] + j * x.strides[1]); };
    // NaN above everything, as torch.topk; of equal values the lower index first (or the higher).
    auto before = [&](int64_t p, int64_t q) {
      const float a = val(p), c = val(q);
      if (std::isnan(a) || std::isnan(c))
        return std::isnan(a) &&
               (!std::isnan(c) || (bug == TopkBug::ties_high_first ? p > q : p < q));
      if (a != c) return a > c;
      return bug == TopkBug::ties_high_first ? p > q : p < q;
    };
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), before);
    for (int64_t i = 0; i < k; ++i) {
      int64_t j = order[static_cast<size_t>(i)];
      v.as<float>()[b * v.strides[0] + i * v.strides[1]] = val(j);
      if (bug == TopkBug::duplicate_index)  // the first position holding this value
        for (int64_t q = 0; q < n; ++q)
          if (val(q) == val(j)) {
            j = q;
            break;
          }
      if (bug == TopkBug::out_of_range && i == k - 1) j = n;
      ix.as<int64_t>()[b * ix.strides[0] + i * ix.strides[1]] = j;
    }
  }
}

TEST(OpsThroughTheRunner, IndexOutputsAreJudgedByWhatTheySelect) {
  const std::string path = ::testing::TempDir() + "/topk_test.json";
  { std::ofstream(path) << kTopkOp; }
  load_op_files(path);
  const auto kernel = [](const char* name, TopkBug bug) {
    return cpu_kernel(name, "topk_test", [=](const KernelCall& c) { topk_rows(c, bug); });
  };
  int64_t run = 0;
  for (TopkBug ok : {TopkBug::none, TopkBug::ties_high_first}) {
    const auto good = failures(kernel("topk_ok", ok), 8, &run);
    EXPECT_TRUE(good.empty()) << ::testing::PrintToString(good);
  }
  EXPECT_GT(run, 40);
  const auto dup = failures(kernel("topk_dup", TopkBug::duplicate_index), 8, &run);
  ASSERT_FALSE(dup.empty());
  EXPECT_NE(dup.front().find("[index] output 'indices': "), std::string::npos) << dup.front();
  EXPECT_NE(dup.front().find("hold an index twice"), std::string::npos) << dup.front();
  const auto oob = failures(kernel("topk_oob", TopkBug::out_of_range), 8, &run);
  ASSERT_FALSE(oob.empty());
  EXPECT_NE(oob.front().find("indices outside [0, "), std::string::npos) << oob.front();
}

// int8 quantization (an i8 output beside an f32 one), and bool and fp8 outputs: one-byte dtypes
// whose poison is a value kernels may write.
const char* const kQuantOp = R"op({
  "format": "kgate-op/1",
  "name": "quant_test",
  "symbols": [{"name": "T", "min": 0, "max": 64, "typical_max": 8}, {"name": "H", "min": 1, "max": 512, "typical_max": 64}],
  "inputs": [{"name": "x", "shape": ["T", "H"], "values": {"kind": "norm", "zero_constant": true}}],
  "outputs": [{"name": "q", "shape": ["T", "H"], "dtype": "i8"}, {"name": "scale", "shape": ["T", 1], "dtype": "f32"},
              {"name": "positive", "shape": ["T", "H"], "dtype": "bool"},
              {"name": "x8", "shape": ["T", "H"], "dtype": "f8e4m3"}],
  "dtypes": ["f32"],
  "reduced": "H",
  "nan": "ignore",
  "reference": ["def reference(x: Tensor, compute: int, q_dtype: int, x8_dtype: int) -> Tuple[Tensor, Tensor, Tensor, Tensor]:",
                "    xf = x.to(compute)",
                "    amax = torch.clamp(torch.amax(torch.abs(xf), -1, keepdim=True), min=1e-10)",
                "    scale = amax / torch.full_like(amax, 127.0)",
                "    q = torch.clamp(torch.round(xf / scale), -127.0, 127.0).to(q_dtype)",
                "    return q, scale, x > 0, torch.clamp(x, -448.0, 448.0).to(x8_dtype)"]
})op";

// float -> float8_e4m3fn bits (bias 7, 3 mantissa bits, no infinities, 0x7F NaN), rounding to
// nearest even as torch does, or toward zero (a mutant). |f| <= 448 here.
uint8_t to_e4m3(float f, bool toward_zero) {
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  const float a = std::fabs(f);
  if (std::isnan(f)) return sign | 0x7F;
  const auto round = [&](float v) { return toward_zero ? std::trunc(v) : std::nearbyint(v); };
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int biased = e + 6;
  if (a == 0 || biased <= 0)
    return sign | static_cast<uint8_t>(round(a * 512.f));  // subnormal: steps of 2^-9
  float q = round(std::ldexp(a, 4 - e));                   // 1.xxx * 8, in [8, 16]
  if (q == 16) {
    q = 8;
    ++biased;
  }
  return sign | static_cast<uint8_t>(biased << 3) | static_cast<uint8_t>(q - 8);
}

enum class QuantBug { none, truncates, last_unwritten, bool_unwritten, fp8_truncated };

void quant_rows(const KernelCall& call, QuantBug bug) {
  const auto& x = call.inputs.at(0);
  const auto& q = call.outputs.at(0);
  const auto& s = call.outputs.at(1);
  const auto& pos = call.outputs.at(2);
  const auto& x8 = call.outputs.at(3);
  const int64_t h = x.sizes[1];
  for (int64_t t = 0; t < x.sizes[0]; ++t) {
    auto val = [&](int64_t j) { return at(x, t * x.strides[0] + j * x.strides[1]); };
    float amax = 0;
    for (int64_t j = 0; j < h; ++j) amax = std::fmax(amax, std::fabs(val(j)));
    const float scale = std::fmax(amax, 1e-10f) / 127.0f;
    s.as<float>()[t * s.strides[0]] = scale;
    for (int64_t j = 0; j < h; ++j) {
      const float r = val(j) / scale;
      const float rounded = bug == QuantBug::truncates ? std::trunc(r) : std::nearbyint(r);
      if (!(bug == QuantBug::last_unwritten && j == h - 1))
        q.as<int8_t>()[t * q.strides[0] + j * q.strides[1]] =
            static_cast<int8_t>(std::fmin(std::fmax(rounded, -127.f), 127.f));
      if (!(bug == QuantBug::bool_unwritten && j == 0))
        pos.as<bool>()[t * pos.strides[0] + j * pos.strides[1]] = val(j) > 0;
      const float c = std::fmin(std::fmax(val(j), -448.f), 448.f);
      x8.as<uint8_t>()[t * x8.strides[0] + j * x8.strides[1]] =
          to_e4m3(c, bug == QuantBug::fp8_truncated);
    }
  }
}

TEST(OpsThroughTheRunner, OneByteOutputs) {
  const std::string path = ::testing::TempDir() + "/quant_test.json";
  { std::ofstream(path) << kQuantOp; }
  load_op_files(path);
  const auto kernel = [](const char* name, QuantBug bug) {
    return cpu_kernel(name, "quant_test", [=](const KernelCall& c) { quant_rows(c, bug); });
  };
  int64_t run = 0;
  const auto good = failures(kernel("quant_ok", QuantBug::none), 8, &run);
  EXPECT_TRUE(good.empty()) << ::testing::PrintToString(good);
  EXPECT_GT(run, 20);
  const auto expect_failure = [&](const char* name, QuantBug bug, const std::string& text) {
    const auto f = failures(kernel(name, bug), 8, &run);
    ASSERT_FALSE(f.empty()) << name;
    EXPECT_NE(f.front().find(text), std::string::npos) << name << ": " << f.front();
  };
  expect_failure("quant_truncates", QuantBug::truncates, "output 'q': ");
  expect_failure("quant_last_unwritten", QuantBug::last_unwritten, "were never written");
  expect_failure("quant_bool_unwritten", QuantBug::bool_unwritten, "were never written");
  expect_failure("quant_fp8_truncated", QuantBug::fp8_truncated, "output 'x8': ");
}

// The conditioned rule on known answers: f32 GEMMs that sum K in four orders (all correct) and two
// that round their inputs first (bf16, TF32), on kgate's matmul op file, at K = 512 and at the
// domain's K = 16384, with normal and large-mean values. Every order passes, both rounding bugs
// fail, under the op's default rule.
float round_mantissa(float v, int bits) {  // to `bits` stored mantissa bits, round to nearest even
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  const uint32_t drop = 23 - static_cast<uint32_t>(bits);
  const uint32_t half = (1u << (drop - 1)) - 1 + ((u >> drop) & 1u);
  u = (u + half) & ~((1u << drop) - 1);
  std::memcpy(&v, &u, sizeof v);
  return v;
}

enum class Order { forward, reverse, blocked64, pairwise };

float pairwise_sum(const std::vector<float>& t, size_t lo, size_t hi) {
  if (hi - lo <= 2) return hi - lo == 2 ? t[lo] + t[lo + 1] : hi > lo ? t[lo] : 0.f;
  const size_t mid = lo + (hi - lo) / 2;
  return pairwise_sum(t, lo, mid) + pairwise_sum(t, mid, hi);
}

void gemm(const KernelCall& call, Order order, int input_bits) {
  const auto& a = call.inputs.at(0);
  const auto& b = call.inputs.at(1);
  const auto& y = call.outputs.at(0);
  const int64_t m = a.sizes[0], k = a.sizes[1], n = b.sizes[1];
  std::vector<float> terms(static_cast<size_t>(k));
  auto in = [&](const TensorView& t, int64_t r, int64_t c) {
    const float v = at(t, r * t.strides[0] + c * t.strides[1]);
    return input_bits < 23 ? round_mantissa(v, input_bits) : v;
  };
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0;
      if (order == Order::forward) {
        for (int64_t p = 0; p < k; ++p) acc = std::fma(in(a, i, p), in(b, p, j), acc);
      } else if (order == Order::reverse) {
        for (int64_t p = k - 1; p >= 0; --p) acc += in(a, i, p) * in(b, p, j);
      } else if (order == Order::blocked64) {
        for (int64_t p0 = 0; p0 < k; p0 += 64) {
          float part = 0;
          for (int64_t p = p0; p < std::min(k, p0 + 64); ++p)
            part = std::fma(in(a, i, p), in(b, p, j), part);
          acc += part;
        }
      } else {
        for (int64_t p = 0; p < k; ++p) terms[static_cast<size_t>(p)] = in(a, i, p) * in(b, p, j);
        acc = pairwise_sum(terms, 0, static_cast<size_t>(k));
      }
      y.as<float>()[i * y.strides[0] + j * y.strides[1]] = acc;
    }
}

TEST(OpsThroughTheRunner, ConditionedRuleTakesEverySummationOrderAndNoRoundedInputs) {
  load_op_files(std::string(KGATE_SOURCE_DIR) + "/kernels/gemm/package/matmul.op.json");
  const OpSignature& op = find_op("matmul");
  ASSERT_EQ(op.default_rule, "conditioned");
  const auto rule = rule_for(op, DType::f32, CheckOptions{});
  ASSERT_EQ(rule.kind, correctness::RuleKind::conditioned);
  std::vector<Case> cases;
  for (int64_t k : {int64_t{512}, int64_t{16384}})
    for (Values v : {Values::normal, Values::large_mean}) {
      Case c;
      c.op = "matmul";
      c.dtype = DType::f32;
      c.dims = {{"M", 3}, {"N", 40}, {"K", k}};
      c.values = v;
      c.family = "long";
      c.seed = 11 + static_cast<uint64_t>(k);
      cases.push_back(c);
    }
  const std::pair<const char*, Order> orders[] = {{"forward_fma", Order::forward},
                                                  {"reverse", Order::reverse},
                                                  {"blocked64", Order::blocked64},
                                                  {"pairwise", Order::pairwise}};
  for (const auto& [name, order] : orders) {
    const KernelInfo k =
        cpu_kernel(name, "matmul", [order = order](const KernelCall& c) { gemm(c, order, 23); });
    for (const auto& c : cases) {
      const auto r = cpu_runner().check_case(k, c, rule);
      EXPECT_EQ(r.outcome, Outcome::passed) << name << " " << c.id() << ": " << r.message;
      EXPECT_EQ(r.rule, Reason::conditioned);
      EXPECT_LT(r.margin, 0.5) << name << " " << c.id();  // well inside: not FRAGILE
      std::printf("control %-12s %-40s margin %.3f\n", name, c.id().c_str(), r.margin);
    }
  }
  for (const auto& [name, bits] :
       {std::pair<const char*, int>{"bf16_inputs", 7}, {"tf32_inputs", 10}}) {
    const KernelInfo k = cpu_kernel(
        name, "matmul", [bits = bits](const KernelCall& c) { gemm(c, Order::forward, bits); });
    for (const auto& c : cases) {
      const auto r = cpu_runner().check_case(k, c, rule);
      std::printf("mutant  %-12s %-40s %s at %.3g x the allowance\n", name, c.id().c_str(),
                  outcome_name(r.outcome), r.margin);
      EXPECT_EQ(r.outcome, Outcome::failed) << name << " " << c.id();
      EXPECT_GT(r.margin, 2) << name << " " << c.id();
    }
  }
}

// bf16 storage: its bits, and a float rounded to it (to nearest, ties to even).
float bf16_value(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
uint16_t bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float bf16_round(float f) { return bf16_value(bf16_bits(f)); }

enum class Rope { hf_bf16, fma_bf16, wrong_sign, second_half_angles };
// Liger's RoPE (tests/external/ops/liger_rope.op.json) on bf16, in place: each head's halves x1, x2
// become x1 c - x2 s and x2 c + x1 s with c, s the first D/2 entries of cos and sin at the token's
// position. hf_bf16 rounds each product and the result to bf16 (Hugging Face's eager in bf16);
// fma_bf16 contracts the first product into the subtraction (a compiler's FMA). The mutants: the
// rotation's sign flipped, and the angles of the second half of cos and sin.
void rope(const KernelCall& call, Rope how) {
  const auto& cos = call.inputs.at(2);
  const auto& sin = call.inputs.at(3);
  for (size_t o = 0; o < 2; ++o) {
    const auto& x = call.outputs.at(o);  // the input itself (q_out aliases q, k_out k)
    const int64_t d2 = x.sizes[3] / 2;
    const int64_t shift = how == Rope::second_half_angles ? d2 : 0;
    for (int64_t b = 0; b < x.sizes[0]; ++b)
      for (int64_t t = 0; t < x.sizes[1]; ++t)
        for (int64_t h = 0; h < x.sizes[2]; ++h) {
          auto* row = x.as<uint16_t>() + b * x.strides[0] + t * x.strides[1] + h * x.strides[2];
          for (int64_t j = 0; j < d2; ++j) {
            const auto angle = [&](const TensorView& v) {
              return bf16_value(
                  v.as<const uint16_t>()[t * v.strides[1] + (j + shift) * v.strides[2]]);
            };
            const float c = angle(cos), s = angle(sin);
            const float x1 = bf16_value(row[j * x.strides[3]]);
            const float x2 = bf16_value(row[(j + d2) * x.strides[3]]);
            float y1, y2;
            if (how == Rope::fma_bf16) {
              y1 = std::fma(x1, c, -bf16_round(x2 * s));
              y2 = std::fma(x2, c, bf16_round(x1 * s));
            } else if (how == Rope::wrong_sign) {
              y1 = x1 * c + x2 * s;
              y2 = x2 * c - x1 * s;
            } else {
              y1 = bf16_round(x1 * c) - bf16_round(x2 * s);
              y2 = bf16_round(x2 * c) + bf16_round(x1 * s);
            }
            row[j * x.strides[3]] = bf16_bits(y1);
            row[(j + d2) * x.strides[3]] = bf16_bits(y2);
          }
        }
  }
}

// An op whose arithmetic is in the case's dtype (conditioning.accumulate "case": Liger's and
// Hugging Face's RoPE in bf16): kernels that round their products to bf16 pass it, in either
// order of rounding, and the same kernels fail when the allowance takes float32's epsilon (as
// Liger's own package did on 33 of 111 cases on a GPU before the op file said so); a wrong
// rotation fails under either.
TEST(OpsThroughTheRunner, AnOpsArithmeticInTheCaseDtype) {
  load_op_files(std::string(KGATE_SOURCE_DIR) + "/tests/external/ops/liger_rope.op.json");
  const OpSignature& op = find_op("liger_rope");
  ASSERT_TRUE(op.accumulate_in_case_dtype);
  const props::KernelTraits traits{{DType::bf16}, {}, true, true};
  std::vector<Case> cases;
  for (const auto& family : {std::string("random"), std::string("ragged")})
    for (auto& c : props::generate_family(op, traits, family, 12, 5, 1 << 15)) cases.push_back(c);
  ASSERT_GE(cases.size(), 12u);
  const auto rule = rule_for(op, DType::bf16, CheckOptions{});
  ASSERT_EQ(rule.kind, correctness::RuleKind::conditioned);
  ASSERT_TRUE(rule.accumulate_in_case_dtype);
  auto as_float32 = rule;
  as_float32.accumulate_in_case_dtype = false;
  const auto kernel = [](const char* name, Rope how) {
    KernelInfo k = cpu_kernel(name, "liger_rope", [how](const KernelCall& c) { rope(c, how); });
    k.dtypes = {DType::bf16};
    return k;
  };
  for (const auto& [name, how] :
       {std::pair<const char*, Rope>{"hf_bf16", Rope::hf_bf16}, {"fma_bf16", Rope::fma_bf16}}) {
    const KernelInfo k = kernel(name, how);
    int failed_as_float32 = 0;
    double worst = 0;
    for (const auto& c : cases) {
      const auto r = cpu_runner().check_case(k, c, rule);
      EXPECT_EQ(r.outcome, Outcome::passed) << name << " " << c.id() << ": " << r.message;
      worst = std::max(worst, r.margin);
      const auto f = cpu_runner().check_case(k, c, as_float32);
      if (f.outcome == Outcome::failed) {
        ++failed_as_float32;
        EXPECT_NE(f.message.find("eps_f32 x (sum |terms|"), std::string::npos) << f.message;
      }
    }
    std::printf("control %-9s worst margin %.3f; under float32's epsilon %d of %zu fail\n", name,
                worst, failed_as_float32, cases.size());
    EXPECT_LT(worst, 0.5) << name;
    EXPECT_GT(failed_as_float32, 0) << name << ": the case dtype's epsilon made no difference";
  }
  for (const auto& [name, how] : {std::pair<const char*, Rope>{"wrong_sign", Rope::wrong_sign},
                                  {"second_half", Rope::second_half_angles}}) {
    const KernelInfo k = kernel(name, how);
    int failed = 0;
    for (const auto& c : cases) {
      const auto r = cpu_runner().check_case(k, c, rule);
      if (r.outcome != Outcome::failed) continue;
      ++failed;
      EXPECT_NE(r.message.find("eps_bf16 x (sum |terms|"), std::string::npos) << r.message;
    }
    std::printf("mutant  %-11s fails %d of %zu\n", name, failed, cases.size());
    EXPECT_GE(failed * 2, static_cast<int>(cases.size())) << name;
  }
}

// Reference failures belong to the reference: an op file whose reference throws on rows of 7 and
// cannot take a strided view (x.view) judges the cases it can, reports the others as reference
// errors (invalid, never failed), inside the guard and in the fallback outside it, and takes
// contiguous copies where the view is what it cannot take.
const char* const kFussyOp = R"({
  "format": "kgate-op/1",
  "name": "fussy_double_test",
  "symbols": [{"name": "B", "min": 1, "max": 64}, {"name": "N", "min": 1, "max": 64}],
  "inputs": [{"name": "x", "shape": ["B", "N"]}],
  "outputs": [{"name": "y", "shape": ["B", "N"]}],
  "dtypes": ["f32"],
  "reduced": "N",
  "reference": "def reference(x: Tensor) -> Tensor:\n    assert x.size(1) != 7, 'rows of 7'\n    return (2.0 * x.view([-1])).view(x.size())\n"
})";

void twice(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  for (int64_t b = 0; b < x.sizes[0]; ++b)
    for (int64_t n = 0; n < x.sizes[1]; ++n)
      y.as<float>()[b * y.strides[0] + n * y.strides[1]] =
          2.0f * at(x, b * x.strides[0] + n * x.strides[1]);
}

TEST(OpsThroughTheRunner, ReferenceFailuresAreTheReferences) {
  const std::string path = ::testing::TempDir() + "/fussy_double_test.json";
  { std::ofstream(path) << kFussyOp; }
  load_op_files(path);
  for (const bool guarded : {false, true}) {
    KernelInfo k = cpu_kernel(guarded ? "twice_guarded" : "twice", "fussy_double_test", twice);
    // The guarded kernel takes no call: every case runs the fallback.
    if (guarded) k.accepts = [](const KernelCall&) { return false; };
    const auto rule = rule_for(find_op(k.op), DType::f32, CheckOptions{});
    auto run = [&](int64_t n, Layout layout) {
      Case c;
      c.op = k.op;
      c.dtype = DType::f32;
      c.dims = {{"B", 3}, {"N", n}};
      c.values = Values::normal;
      c.layout = layout;
      c.seed = 5;
      return cpu_runner().check_case(k, c, rule);
    };
    const auto fine = run(5, Layout::contiguous);
    EXPECT_EQ(fine.outcome, Outcome::passed) << k.name << ": " << fine.message;
    const auto seven = run(7, Layout::contiguous);
    EXPECT_EQ(seven.outcome, Outcome::invalid) << k.name << ": " << seven.message;
    EXPECT_EQ(seven.rule, Reason::reference_error) << k.name;
    EXPECT_NE(seven.message.find("rows of 7"), std::string::npos) << seven.message;
    EXPECT_NE(seven.message.find("not the kernel's"), std::string::npos) << seven.message;
    const auto strided = run(5, Layout::padded);  // rows 8 apart: no view([-1])
    EXPECT_EQ(strided.outcome, Outcome::passed) << k.name << ": " << strided.message;
    EXPECT_NE(strided.message.find("ran on contiguous copies"), std::string::npos)
        << k.name << ": " << strided.message;
    const auto after = run(6, Layout::contiguous);  // the run goes on
    EXPECT_EQ(after.outcome, Outcome::passed) << k.name << ": " << after.message;
  }
}

}  // namespace
}  // namespace kgate
