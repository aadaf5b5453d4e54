// silu_and_mul (SwiGLU's gate): x:[B, 2H] holds [a | b] along the last dim, y:[B, H] = silu(a) * b
// with silu(a) = a / (1 + exp(-a)).
// Eager: at::silu(a) * b in the case's dtype (silu rounded to the dtype before the product, one
// ulp from a fused kernel that rounds once: within the f16/bf16 rtol).
// Extreme values: magnitudes up to sqrt(dtype max / 2), so that silu(a) * b itself stays finite
// (exp(-a) still overflows); a product near the overflow threshold would make Inf vs finite a
// matter of rounding order.
// NaN contract (as ATen): silu(-Inf) = -Inf / Inf = NaN; NaN, Inf * 0 and Inf - Inf follow IEEE.
// B may be 0 (an empty batch).
#include <ATen/ops/silu.h>
#include <cmath>

#include "references/op_reference.hpp"

namespace kgate {

OpSignature silu_and_mul_signature() {
  OpSignature op;
  op.name = "silu_and_mul";
  op.summary = "y = silu(x[:, :H]) * x[:, H:] for x:[B,2H], y:[B,H]";
  op.inputs = {{"x", {"B", "2*H"}}};
  op.outputs = {{"y", {"B", "H"}}};
  op.min_bytes_read = "bytes_x";
  op.min_bytes_written = "bytes_y";
  op.symbols = {{"B", 0, 65536, 512}, {"H", 1, 32768, 4096}};
  op.reduced_symbol = "H";
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  for (DType d : op.dtypes) op.tolerance[d] = assert_close_tolerance(d);
  op.nan_contract = NanContract::propagate;
  op.deterministic = true;
  return op;
}

OpReference silu_and_mul_reference() {
  OpReference r;
  r.make_inputs = [](const Case& c, const OpSignature& op, at::Device device) {
    const auto shape = concrete_shape(op.inputs[0].shape, c);
    const double extreme = std::sqrt(0.5 * dtype_max(c.dtype));
    return Tensors{apply_layout(make_values(c.values, shape, c.dtype, c.seed, extreme, device),
                                c.layout, device)};
  };
  auto run = [](const Tensors& in, const Attributes&) {
    const auto& x = in[0];
    const int64_t h = x.size(-1) / 2;
    return Tensors{at::silu(x.narrow(-1, 0, h)).mul(x.narrow(-1, h, h))};
  };
  r.eager = run;
  r.oracle = run;  // on float64 inputs
  return r;
}

}  // namespace kgate
