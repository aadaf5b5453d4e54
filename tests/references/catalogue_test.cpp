// The op catalogue on the CPU (no GPU needed): signatures are consistent; every op's inputs build
// for every family with the signature's shapes and dtypes (integer inputs in range); the eager
// reference and the fp64 oracle agree on finite cases; dim expressions and call attributes; and the
// contracts the references document (rms_norm's Inf rows, norm value families, exact embedding).
#include <ATen/ATen.h>  // op_reference.hpp brings only the tensor type
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "core/expr.hpp"
#include "gates/props/generators.hpp"
#include "references/catalogue.hpp"
#include "references/op_reference.hpp"

namespace kgate {
namespace {

std::vector<std::string> op_names() {
  std::vector<std::string> out;
  for (const auto& op : op_catalogue()) out.push_back(op.name);
  return out;
}

Case case_with(const std::string& op, std::vector<std::pair<std::string, int64_t>> dims) {
  Case c;
  c.op = op;
  c.dims = std::move(dims);
  return c;
}

TEST(Catalogue, HasTheOps) {
  const auto names = op_names();
  for (const char* expected :
       {"adaptive_avg_pool2d", "embedding", "gelu", "gelu_tanh", "group_norm", "layer_norm",
        "log_softmax", "rms_norm", "silu_and_mul", "softmax", "softmax_varlen"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

TEST(Catalogue, DimExpressions) {
  const Case c = case_with("x", {{"H", 3}, {"G", 2}, {"CG", 5}, {"S", 4}});
  EXPECT_EQ(concrete_shape({"2*H", "G*CG", "S+1", "7", "H"}, c),
            (std::vector<int64_t>{6, 10, 5, 7, 3}));
  EXPECT_EQ(concrete_shape({"G*CG+S*2+1"}, c), (std::vector<int64_t>{19}));
  EXPECT_ANY_THROW(concrete_shape({"2**H"}, c));
  EXPECT_ANY_THROW(concrete_shape({"Q"}, c));
}

TEST(Catalogue, CallAttributesCarryTheSymbols) {
  const auto& pool = find_op("adaptive_avg_pool2d");
  Case c = case_with(pool.name, {{"B", 1}, {"C", 2}, {"H", 9}, {"W", 7}, {"OH", 4}, {"OW", 3}});
  const auto a = call_attributes(pool, c);
  EXPECT_EQ(a.at("OH"), 4);
  EXPECT_EQ(a.at("OW"), 3);
  const auto& ln = find_op("layer_norm");
  const auto b = call_attributes(ln, case_with(ln.name, {{"B", 2}, {"N", 8}}));
  EXPECT_DOUBLE_EQ(b.at("eps"), 1e-5);
  EXPECT_EQ(b.at("N"), 8);
}

class EveryOp : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryOp, SignatureIsConsistent) {
  const auto& op = find_op(GetParam());
  ASSERT_FALSE(op.symbols.empty());
  ASSERT_NE(op.symbol(op.reduced_symbol), nullptr) << "reduced symbol " << op.reduced_symbol;
  for (const auto& s : op.symbols) {
    EXPECT_LE(s.min, s.max) << s.name;
    EXPECT_GE(s.min, 0) << s.name;
    if (s.typical_max) {
      EXPECT_LE(s.typical_max, s.max) << s.name;
    }
  }
  for (DType d : op.dtypes) EXPECT_TRUE(op.tolerance.count(d)) << dtype_name(d);
  Case c;
  c.op = op.name;
  for (const auto& s : op.symbols) c.dims.emplace_back(s.name, 2);
  for (const auto& t : op.inputs) EXPECT_NO_THROW(concrete_shape(t.shape, c)) << t.name;
  for (const auto& t : op.outputs) EXPECT_NO_THROW(concrete_shape(t.shape, c)) << t.name;
}

// Every in-tree op declares its speed-of-light floor, and the floor is a floor: positive, and no
// more than every tensor read and written once.
TEST_P(EveryOp, DeclaresASpeedOfLightFloorNoLargerThanItsTensors) {
  const auto& op = find_op(GetParam());
  ASSERT_FALSE(op.min_bytes_read.empty()) << op.name << " declares no min_bytes.read";
  ASSERT_FALSE(op.min_bytes_written.empty()) << op.name << " declares no min_bytes.written";
  Case c;
  c.op = op.name;
  c.dtype = op.dtypes.front();
  for (const auto& s : op.symbols)
    c.dims.emplace_back(s.name, std::max<int64_t>(s.min, std::min<int64_t>(s.max, 8)));
  package::SymbolValues values(c.dims.begin(), c.dims.end());
  values["dtype_size"] = static_cast<int64_t>(dtype_size(c.dtype));
  int64_t all_in = 0, all_out = 0;
  for (const auto* list : {&op.inputs, &op.outputs})
    for (const auto& t : *list) {
      int64_t bytes = static_cast<int64_t>(dtype_size(op.tensor_dtype(t, c.dtype)));
      for (int64_t d : concrete_shape(t.shape, c)) bytes *= d;
      values["bytes_" + t.name] = bytes;
      (list == &op.inputs ? all_in : all_out) += bytes;
    }
  const int64_t read = package::evaluate_expr(op.min_bytes_read, values);
  const int64_t written = package::evaluate_expr(op.min_bytes_written, values);
  EXPECT_GT(read, 0) << op.min_bytes_read;
  EXPECT_GT(written, 0) << op.min_bytes_written;
  EXPECT_LE(read, all_in) << op.min_bytes_read;
  EXPECT_LE(written, all_out) << op.min_bytes_written;
}

// Checks the inputs of `c` against the signature (shapes, dtypes, layouts, integer ranges).
void check_inputs(const OpSignature& op, const Case& c, const Tensors& in) {
  ASSERT_EQ(in.size(), op.inputs.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const auto& t = in[i];
    EXPECT_EQ(t.sizes().vec(), concrete_shape(op.inputs[i].shape, c))
        << op.inputs[i].name << " of " << c.id();
    if (t.is_floating_point()) {
      EXPECT_EQ(from_scalar_type(t.scalar_type()), c.dtype) << op.inputs[i].name;
    }
  }
  if (c.layout == Layout::offset && in[0].numel() > 0) {
    EXPECT_EQ(in[0].storage_offset(), 1) << c.id();
  }
  if (c.layout == Layout::strided && in[0].dim() > 0 && in[0].size(-1) > 1) {
    EXPECT_FALSE(in[0].is_contiguous());
  }
  // Row-padded: unit-stride rows, each kPaddedLayoutElements longer in storage.
  if (c.layout == Layout::padded && in[0].dim() >= 2) {
    EXPECT_EQ(in[0].stride(-1), 1) << c.id();
    EXPECT_EQ(in[0].stride(-2), in[0].size(-1) + kPaddedLayoutElements) << c.id();
  }
  // 16 bytes into the storage: 16-byte aligned, not 256-byte aligned.
  if (c.layout == Layout::offset16 && in[0].numel() > 0) {
    EXPECT_TRUE(in[0].is_contiguous()) << c.id();
    EXPECT_EQ(in[0].storage_offset() * static_cast<int64_t>(in[0].element_size()),
              std::max<int64_t>(16, static_cast<int64_t>(in[0].element_size())))
        << c.id();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(in[0].data_ptr()) % 64, 16u)
        << c.id();  // CPU storage: 64-aligned
  }
  if (op.name == "embedding") {
    const auto& idx = in[1];
    EXPECT_EQ(idx.scalar_type(), at::kLong);
    if (idx.numel() > 0) {
      EXPECT_GE(idx.min().item<int64_t>(), 0);
      EXPECT_LT(idx.max().item<int64_t>(), c.dim("V"));
    }
  }
  if (op.name == "softmax_varlen") {
    const auto cu = in[1].to(at::kLong);
    EXPECT_EQ(in[1].scalar_type(), at::kInt);
    EXPECT_EQ(cu[0].item<int64_t>(), 0);
    EXPECT_EQ(cu[-1].item<int64_t>(), c.dim("T"));
    if (cu.numel() > 1) {
      EXPECT_TRUE((cu.slice(0, 1) >= cu.slice(0, 0, -1)).all().item<bool>()) << c.id();
    }
  }
}

TEST_P(EveryOp, InputsReferenceAndOracleOnTheCpu) {
  const auto& op = find_op(GetParam());
  const auto& ref = op_reference(op.name);
  props::KernelTraits traits;
  traits.accepts_strided = true;
  const at::Device cpu(at::kCPU);
  int64_t compared = 0;
  for (const auto& family : props::applicable_families(op, traits)) {
    for (const auto& c :
         props::generate_family(op, traits, family, 6, /*seed=*/7, /*max_elements=*/1 << 14)) {
      const Tensors in = ref.make_inputs(c, op, cpu);
      check_inputs(op, c, in);
      if (c.dtype != DType::f32) continue;  // CPU half kernels are not the point here
      const auto attrs = call_attributes(op, c);
      const Tensors eager = ref.eager(in, attrs);
      Tensors upcast;
      for (const auto& t : in) upcast.push_back(t.to(at::kDouble));
      const Tensors oracle = ref.oracle(upcast, attrs);
      ASSERT_EQ(eager.size(), op.outputs.size());
      ASSERT_EQ(oracle.size(), op.outputs.size());
      for (size_t i = 0; i < eager.size(); ++i) {
        const auto shape = concrete_shape(op.outputs[i].shape, c);
        EXPECT_EQ(eager[i].sizes().vec(), shape) << c.id();
        EXPECT_EQ(eager[i].scalar_type(), at::kFloat) << c.id();
        EXPECT_EQ(oracle[i].scalar_type(), at::kDouble) << c.id();
        if (family == "random" || family == "ragged" || family == "layout") {
          EXPECT_TRUE(
              at::allclose(eager[i].to(at::kDouble), oracle[i], 1e-4, 1e-5, /*equal_nan=*/true))
              << "eager and oracle disagree on " << c.id();
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 0);
}

INSTANTIATE_TEST_SUITE_P(Catalogue, EveryOp, ::testing::ValuesIn(op_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(Contracts, RmsNormRowWithInfIsZeroWithNanAtTheInf) {
  const auto& op = find_op("rms_norm");
  const auto x = at::tensor({1.0f, INFINITY, -2.0f}).reshape({1, 3});
  const auto y = op_reference("rms_norm").eager({x, at::ones({3})}, op.attributes)[0];
  EXPECT_EQ(y[0][0].item<float>(), 0.f);
  EXPECT_TRUE(std::isnan(y[0][1].item<float>()));
  EXPECT_EQ(y[0][2].item<float>(), 0.f);
}

TEST(Contracts, NormValueFamilies) {
  const auto lm =
      make_norm_values(Values::large_mean, {1 << 14}, DType::f32, 3, 16, true).to(at::kDouble);
  EXPECT_NEAR(lm.mean().item<double>(), 1000, 5);
  EXPECT_NEAR(lm.std().item<double>(), 1000.0 / 16, 3);
  EXPECT_TRUE(make_norm_values(Values::all_equal, {4, 9}, DType::bf16, 3, 16, true)
                  .eq(0)
                  .all()
                  .item<bool>());
  const auto eq = make_norm_values(Values::all_equal, {4, 9}, DType::f32, 3, 16, false);
  EXPECT_TRUE(eq.eq(eq.flatten()[0]).all().item<bool>());
  const auto ex = make_norm_values(Values::extreme, {1 << 12}, DType::f32, 3, 16, true);
  EXPECT_LE(ex.abs().max().item<float>(), 1e15f);
  EXPECT_GT(ex.abs().max().item<float>(), 1e14f);
  const auto ex16 =
      make_norm_values(Values::extreme, {1 << 12}, DType::f16, 3, 16, true).to(at::kFloat);
  EXPECT_LE(ex16.abs().max().item<float>(), 32752.f);
}

TEST(Contracts, EmbeddingIsExactAndIndicesCoverTheTableEdges) {
  const auto& op = find_op("embedding");
  for (DType d : op.dtypes) {
    EXPECT_EQ(op.tolerance_for(d).atol, 0);
    EXPECT_EQ(op.tolerance_for(d).rtol, 0);
  }
  const Case c = Case::from_id("embedding:f32:T=9,V=5,D=3:contiguous:normal:0000000000000011");
  const auto in = op_reference("embedding").make_inputs(c, op, at::Device(at::kCPU));
  EXPECT_EQ(in[1][0].item<int64_t>(), 4);
  EXPECT_EQ(in[1][8].item<int64_t>(), 0);
}

TEST(Contracts, VarlenOffsetsHaveEmptyAndLongMembers) {
  const auto& op = find_op("softmax_varlen");
  int64_t empty = 0, dominant = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Case c = case_with(op.name, {{"S", 16}, {"T", 10000}});
    c.seed = seed;
    const auto cu = op_reference(op.name).make_inputs(c, op, at::Device(at::kCPU))[1].to(at::kLong);
    const auto len = cu.slice(0, 1) - cu.slice(0, 0, -1);
    empty += len.eq(0).sum().item<int64_t>();
    dominant += len.max().item<int64_t>() >= 4000 ? 1 : 0;
  }
  EXPECT_GT(empty, 40);     // about a quarter of 640 members
  EXPECT_GT(dominant, 10);  // about half of the 40 batches
}

}  // namespace
}  // namespace kgate

namespace kgate {
namespace {

// The counter-based value generator: the right distributions, a pure function of (seed, index),
// and the same values on the GPU as on the CPU.
TEST(Values, NormalAndUniformHaveTheirMoments) {
  const auto n = make_values(Values::normal, {1 << 18}, DType::f64, 7, 0);
  EXPECT_NEAR(n.mean().item<double>(), 0.0, 0.01);
  EXPECT_NEAR(n.std().item<double>(), 1.0, 0.01);
  // Tails: P(|z| > 3) = 0.0027, i.e. ~708 of 2^18; a generator clipped at 3 sigma gives none.
  const double beyond3 = n.abs().gt(3.0).sum().item<double>();
  EXPECT_GT(beyond3, 550);
  EXPECT_LT(beyond3, 870);
  const auto u = make_values(Values::uniform, {1 << 18}, DType::f64, 7, 0);
  EXPECT_GE(u.min().item<double>(), -9.0);
  EXPECT_LE(u.max().item<double>(), 9.0);
  EXPECT_NEAR(u.mean().item<double>(), 0.0, 0.05);
  EXPECT_NEAR(u.std().item<double>(), 18.0 / std::sqrt(12.0), 0.05);
}

TEST(Values, ArePureFunctionsOfSeedAndIndex) {
  const auto a = make_values(Values::special, {33, 65}, DType::f32, 11, 0);
  const auto b = make_values(Values::special, {33, 65}, DType::f32, 11, 0);
  EXPECT_TRUE(a.view(at::kInt).equal(b.view(at::kInt)));  // bitwise, NaNs included
  const auto c = make_values(Values::special, {33, 65}, DType::f32, 12, 0);
  EXPECT_FALSE(a.view(at::kInt).equal(c.view(at::kInt)));
  // Element i does not depend on the tensor's size: a prefix of a longer draw.
  const auto longer = make_values(Values::normal, {1000}, DType::f64, 5, 0);
  const auto shorter = make_values(Values::normal, {10}, DType::f64, 5, 0);
  EXPECT_TRUE(longer.narrow(0, 0, 10).equal(shorter));
  // special holds every special value.
  EXPECT_GT(
      at::isnan(make_values(Values::special, {1 << 14}, DType::f32, 3, 0)).sum().item<int64_t>(),
      0);
  EXPECT_GT(
      at::isinf(make_values(Values::special, {1 << 14}, DType::f32, 3, 0)).sum().item<int64_t>(),
      0);
}

TEST(Values, GpuDrawsTheCpuValues) {
  if (!at::hasCUDA())
    GTEST_SKIP() << "SKIPPED: no CUDA device (the GPU generator is checked on a GPU runner)";
  for (Values family :
       {Values::normal, Values::uniform, Values::extreme, Values::special, Values::clustered_max}) {
    const auto cpu = make_values(family, {64, 1000}, DType::f64, 99, 1e30);
    const auto gpu =
        make_values(family, {64, 1000}, DType::f64, 99, 1e30, at::Device(at::kCUDA, 0)).cpu();
    // log/cos may differ in the last float64 bit between libm and CUDA: allow 4 ulp, NaNs equal.
    const auto both_nan = at::isnan(cpu) & at::isnan(gpu);
    const auto close =
        (cpu - gpu).abs().le(cpu.abs() * 4 * std::numeric_limits<double>::epsilon()) | cpu.eq(gpu);
    EXPECT_TRUE((both_nan | close).all().item<bool>()) << "family " << values_name(family);
  }
}

// Every family is drawn straight into its float dtype: the same bits as the chain of ATen operators
// on a float64 draw (then .to(dtype)) that it replaces, on each device, signed zeros and
// infinities included (NaN where the chain has NaN), for rows of every kind (odd, of one element,
// none, a 0-d tensor).
void expect_direct_draw_is_the_chain(at::Device device) {
  const std::vector<std::vector<int64_t>> shapes = {{129, 1031}, {7, 1}, {3, 5}, {0, 4}, {}};
  for (DType dtype : {DType::f64, DType::f32, DType::f16, DType::bf16})
    for (Values family :
         {Values::normal, Values::uniform, Values::extreme, Values::tiny, Values::large_mean,
          Values::all_equal, Values::clustered_max, Values::pm_pairs, Values::special})
      for (const auto& shape : shapes)
        for (double magnitude : {0.5 * dtype_max(dtype), 1e3}) {
          const auto direct = make_values(family, shape, dtype, 41, magnitude, device).cpu();
          const auto chain = make_values_chained(family, shape, dtype, 41, magnitude, device).cpu();
          ASSERT_EQ(direct.scalar_type(), chain.scalar_type());
          ASSERT_EQ(direct.sizes(), chain.sizes());
          const auto bits = dtype_size(dtype) == 8   ? at::kLong
                            : dtype_size(dtype) == 4 ? at::kInt
                                                     : at::kShort;
          // A NaN's payload is left out: ATen's own CPU conversion to bfloat16 gives 0x7fc0 or
          // 0xffff depending on whether the element fell in a vectorized chunk.
          const auto same = direct.view(bits).eq(chain.view(bits)) |
                            (at::isnan(direct.to(at::kFloat)) & at::isnan(chain.to(at::kFloat)));
          EXPECT_TRUE(same.all().item<bool>())
              << values_name(family) << " " << dtype_name(dtype) << " " << shape.size()
              << "-d, magnitude " << magnitude << " on " << device << ": "
              << same.logical_not().sum().item<int64_t>() << " elements differ";
        }
}

TEST(Values, DrawnDirectlyAsTheOperatorChainDrawsThemOnTheCpu) {
  expect_direct_draw_is_the_chain(at::kCPU);
}

TEST(Values, DrawnDirectlyAsTheOperatorChainDrawsThemOnTheGpu) {
  if (!at::hasCUDA())
    GTEST_SKIP() << "SKIPPED: no CUDA device (the GPU generator is checked on a GPU runner)";
  expect_direct_draw_is_the_chain(at::Device(at::kCUDA, 0));
}

}  // namespace
}  // namespace kgate
