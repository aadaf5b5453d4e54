// rms_norm over the rows of x:[B, N] with weight:[N] (eps = 1e-6):
//   y = x / sqrt(mean(x^2) + eps) * weight.
// Eager: the explicit formula through at:: ops, computed in float (the opmath type of all three
// dtypes) and rounded once to the case's dtype. Not at::rms_norm: its CUDA kernel takes a
// vectorized sum-of-squares path or a Welford path depending on N % 4 and pointer alignment, and
// the two disagree on rows holding +-Inf (all NaN vs 0 with NaN at the Inf), so its NaN pattern
// would depend on the layout. The formula pins one contract: a row with +-Inf (and no NaN) is 0
// except NaN at each Inf (mean(x^2) = Inf, rsqrt = 0, Inf * 0 = NaN); a row with NaN is NaN
// everywhere. Values: make_norm_values (mean/spread 16; non-zero constant rows are fine without a
// mean); weight N(1, 0.5^2), finite in every family.
#include <ATen/ops/mean.h>
#include <ATen/ops/rsqrt.h>

#include "core/rng.hpp"
#include "references/op_reference.hpp"

namespace kgate {

OpSignature rms_norm_signature() {
  OpSignature op;
  op.name = "rms_norm";
  op.summary = "y = x * rsqrt(mean(x^2, -1) + eps) * weight over rows of x:[B,N], weight:[N]";
  op.inputs = {{"x", {"B", "N"}}, {"weight", {"N"}}};
  op.outputs = {{"y", {"B", "N"}}};
  op.min_bytes_read = "bytes_x + bytes_weight";
  op.min_bytes_written = "bytes_y";
  op.symbols = {{"B", 1, 65536, 512}, {"N", 1, 65536, 8192}};
  op.reduced_symbol = "N";
  // A sum of N squares: the conditioned rule, with the oracle on |x| and |weight| as its
  // magnitude (which is |y|: a sum of squares cancels nothing).
  op.conditioning_terms = "N";
  op.default_rule = "conditioned";
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  for (DType d : op.dtypes) op.tolerance[d] = assert_close_tolerance(d);
  op.attributes = {{"eps", 1e-6}};
  op.nan_contract = NanContract::propagate;
  op.deterministic = true;
  return op;
}

namespace {

// The formula in `compute` (float for eager, double for the oracle), the result in x's dtype.
at::Tensor rms_norm_formula(const at::Tensor& x, const at::Tensor& weight, double eps,
                            at::ScalarType compute) {
  const auto xc = x.to(compute);
  const auto inv_rms = at::rsqrt(at::mean(xc.mul(xc), {-1}, /*keepdim=*/true).add(eps));
  return xc.mul(inv_rms).mul(weight.to(compute)).to(x.scalar_type());
}

}  // namespace

OpReference rms_norm_reference() {
  OpReference r;
  r.make_inputs = [](const Case& c, const OpSignature& op, at::Device device) {
    const auto x =
        make_norm_values(c.values, concrete_shape(op.inputs[0].shape, c), c.dtype, c.seed,
                         /*mean_to_spread=*/16, /*zero_constant=*/false, device);
    const auto weight = make_normal(concrete_shape(op.inputs[1].shape, c), c.dtype,
                                    derive_seed(c.seed, "weight", 0), 1.0, 0.5, device);
    return Tensors{apply_layout(x, c.layout, device), apply_layout(weight, c.layout, device)};
  };
  r.eager = [](const Tensors& in, const Attributes& a) {
    return Tensors{rms_norm_formula(in[0], in[1], a.at("eps"), at::kFloat)};
  };
  r.oracle = [](const Tensors& in, const Attributes& a) {
    return Tensors{rms_norm_formula(in[0], in[1], a.at("eps"), at::kDouble)};
  };
  return r;
}

}  // namespace kgate
