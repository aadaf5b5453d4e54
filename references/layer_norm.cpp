// layer_norm over the rows of x:[B, N] with weight:[N] and bias:[N] (eps = 1e-5):
//   y = (x - mean) / sqrt(var + eps) * weight + bias, var biased (divided by N).
// Values: make_norm_values (large_mean at mean/spread = 16, all_equal rows of zeros); weight and
// bias are N(1, 0.5^2) and N(0, 0.5^2), finite in every family — special values go into x only
// (for an infinite weight, Inf vs NaN depends on the evaluation order, which is no contract).
// NaN contract (as ATen): a row with any NaN or +-Inf is NaN everywhere.
#include <ATen/ops/layer_norm.h>

#include "core/rng.hpp"
#include "references/op_reference.hpp"

namespace kgate {

OpSignature layer_norm_signature() {
  OpSignature op;
  op.name = "layer_norm";
  op.summary = "y = layer_norm(x, [N], weight, bias, eps) over rows of x:[B,N]";
  op.inputs = {{"x", {"B", "N"}}, {"weight", {"N"}}, {"bias", {"N"}}};
  op.outputs = {{"y", {"B", "N"}}};
  op.min_bytes_read = "bytes_x + bytes_weight + bytes_bias";
  op.min_bytes_written = "bytes_y";
  op.symbols = {{"B", 1, 65536, 512}, {"N", 1, 65536, 8192}};
  op.reduced_symbol = "N";
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  for (DType d : op.dtypes) op.tolerance[d] = assert_close_tolerance(d);
  op.attributes = {{"eps", 1e-5}};
  op.nan_contract = NanContract::propagate;
  op.deterministic = true;
  return op;
}

OpReference layer_norm_reference() {
  OpReference r;
  r.make_inputs = [](const Case& c, const OpSignature& op, at::Device device) {
    const auto x =
        make_norm_values(c.values, concrete_shape(op.inputs[0].shape, c), c.dtype, c.seed,
                         /*mean_to_spread=*/16, /*zero_constant=*/true, device);
    const auto n = concrete_shape(op.inputs[1].shape, c);
    const auto weight = make_normal(n, c.dtype, derive_seed(c.seed, "weight", 0), 1.0, 0.5, device);
    const auto bias = make_normal(n, c.dtype, derive_seed(c.seed, "bias", 0), 0.0, 0.5, device);
    return Tensors{apply_layout(x, c.layout, device), apply_layout(weight, c.layout, device),
                   apply_layout(bias, c.layout, device)};
  };
  auto run = [](const Tensors& in, const Attributes& a) {
    return Tensors{at::layer_norm(in[0], {in[0].size(-1)}, in[1], in[2], a.at("eps"))};
  };
  r.eager = run;
  r.oracle = run;  // on float64 inputs
  return r;
}

}  // namespace kgate
