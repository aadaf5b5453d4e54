// group_norm of x with C = G * CG channels in G groups of CG, over HW positions, eps = 1e-5.
// Shapes: x:[B, G, CG, HW], weight:[G, CG], bias:[G, CG], y:[B, G, CG, HW] — the channel dim of
// the usual x:[B, C, HW] (or NCHW with HW = H * W) split as [G, CG], which has the same memory
// layout, keeps C divisible by G for every case, and lets a kernel read G and CG from the shapes.
// The eager reference views x as [B, C, HW] and calls at::group_norm(x, G, weight[C], bias[C]).
// Values: make_norm_values with large_mean at mean/spread = 4, not 16: ATen's group_norm computes
// y = a * x + b with a = rstd * weight, b = bias - a * mean, which itself cancels about
// log2(mean/spread) bits of a * x; at 4 its own error stays under the f32 tolerance. all_equal rows
// are zeros; weight N(1, 0.5^2) and bias N(0, 0.5^2) stay finite (special values go into x only).
// NaN contract (as ATen): a group with any NaN or +-Inf is NaN everywhere.
#include <ATen/ops/group_norm.h>

#include "core/rng.hpp"
#include "references/op_reference.hpp"

namespace kgate {

OpSignature group_norm_signature() {
  OpSignature op;
  op.name = "group_norm";
  op.summary =
      "y = group_norm(x, G, weight, bias, eps) of x:[B,G,CG,HW] (channels C = G*CG split as "
      "[G,CG]), "
      "weight/bias:[G,CG]";
  op.inputs = {{"x", {"B", "G", "CG", "HW"}}, {"weight", {"G", "CG"}}, {"bias", {"G", "CG"}}};
  op.outputs = {{"y", {"B", "G", "CG", "HW"}}};
  op.min_bytes_read = "bytes_x + bytes_weight + bytes_bias";
  op.min_bytes_written = "bytes_y";
  op.symbols = {{"B", 1, 256, 16}, {"G", 1, 64, 32}, {"CG", 1, 256, 16}, {"HW", 1, 65536, 1024}};
  op.reduced_symbol = "HW";
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  for (DType d : op.dtypes) op.tolerance[d] = assert_close_tolerance(d);
  op.attributes = {{"eps", 1e-5}};
  op.nan_contract = NanContract::propagate;
  // ATen's bf16/f16 group_norm rounds an a*x+b form whose error vs the fp64 oracle is larger than a
  // careful kernel's (seen on the H200, bf16 B=7,G=1,CG=6,HW=1: eager 0.0120 max abs from the
  // oracle, a float-accumulating kernel 0.0064), so allclose against it rejects kernels that are
  // more accurate than the reference. Judge against the oracle instead.
  op.default_rule = "ref_ratio";
  op.deterministic = true;
  return op;
}

OpReference group_norm_reference() {
  OpReference r;
  r.make_inputs = [](const Case& c, const OpSignature& op, at::Device device) {
    const auto x =
        make_norm_values(c.values, concrete_shape(op.inputs[0].shape, c), c.dtype, c.seed,
                         /*mean_to_spread=*/4, /*zero_constant=*/true, device);
    const auto gc = concrete_shape(op.inputs[1].shape, c);
    const auto weight =
        make_normal(gc, c.dtype, derive_seed(c.seed, "weight", 0), 1.0, 0.5, device);
    const auto bias = make_normal(gc, c.dtype, derive_seed(c.seed, "bias", 0), 0.0, 0.5, device);
    return Tensors{apply_layout(x, c.layout, device), apply_layout(weight, c.layout, device),
                   apply_layout(bias, c.layout, device)};
  };
  auto run = [](const Tensors& in, const Attributes& a) {
    const auto& x = in[0];
    const int64_t b = x.size(0), g = x.size(1), cg = x.size(2), hw = x.size(3);
    const auto y = at::group_norm(x.reshape({b, g * cg, hw}), g, in[1].reshape({g * cg}),
                                  in[2].reshape({g * cg}), a.at("eps"));
    return Tensors{y.reshape({b, g, cg, hw})};
  };
  r.eager = run;
  r.oracle = run;  // on float64 inputs
  return r;
}

}  // namespace kgate
