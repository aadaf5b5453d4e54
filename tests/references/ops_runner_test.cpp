// The new ops through the real Runner on the cpu backend (no GPU needed), with small f32 CPU
// kernels defined here: integer inputs (embedding indices, varlen offsets), shapes given by dim
// expressions ("2*H", "S+1"), sizes read from the call attributes (OH, OW), the exact tolerance of
// embedding, and Runner::check_stale — each verdict as the mutant suite will see it on the GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
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
      if (r.outcome == Outcome::failed) out.push_back(c.id() + " [" + r.rule + "] " + r.message);
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
    EXPECT_EQ(run, 30) << k.name;  // 6 cases of 5 families
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
  EXPECT_EQ(r.rule, "allclose");
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
  EXPECT_EQ(r.rule, "stale");
  EXPECT_EQ(r.kcase, d);
  EXPECT_NE(r.message.find("stale output"), std::string::npos) << r.message;
}

// An op file with an output written in place (kgate-op/1 "alias"): s = x + r is stored into r, and
// y = 2 * s. A correct in-place kernel passes; one that leaves r alone, or that also writes x, fails.
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
    KernelInfo k = cpu_kernel(name, "add_in_place_test", [=](const KernelCall& c) { add_in_place(c, store, touch_x); });
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

}  // namespace
}  // namespace kgate
