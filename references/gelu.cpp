// GELU, elementwise over x:[B, N], as two ops of one definition:
//   gelu       y = x/2 * (1 + erf(x/sqrt(2)))                          (approximate = 0)
//   gelu_tanh  y = x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))   (approximate = 1)
// Two ops because a case carries no attributes of its own, so each variant gets its own cases and
// kernels. NaN contract (as ATen's CUDA kernel): gelu(-Inf) = -Inf * 0 = NaN, gelu(+Inf) = +Inf;
// NaN propagates. B may be 0 (an empty batch).
#include <ATen/ops/gelu.h>

#include "references/op_reference.hpp"

namespace kgate {
namespace {

OpSignature gelu_op(bool tanh) {
  OpSignature op;
  op.name = tanh ? "gelu_tanh" : "gelu";
  op.summary = std::string("y = gelu(x, approximate='") + (tanh ? "tanh" : "none") +
               "') elementwise over x:[B,N]";
  op.inputs = {{"x", {"B", "N"}}};
  op.outputs = {{"y", {"B", "N"}}};
  op.min_bytes_read = "bytes_x";
  op.min_bytes_written = "bytes_y";
  op.symbols = {{"B", 0, 65536, 512}, {"N", 1, 262144, 8192}};
  op.reduced_symbol = "N";
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  for (DType d : op.dtypes) op.tolerance[d] = assert_close_tolerance(d);
  op.attributes = {{"approximate", tanh ? 1 : 0}};
  op.nan_contract = NanContract::propagate;
  op.deterministic = true;
  return op;
}

OpReference gelu_ref() {
  OpReference r;
  r.make_inputs = [](const Case& c, const OpSignature& op, at::Device device) {
    const auto shape = concrete_shape(op.inputs[0].shape, c);
    const double extreme = 0.5 * dtype_max(c.dtype);
    return Tensors{apply_layout(make_values(c.values, shape, c.dtype, c.seed, extreme, device),
                                c.layout, device)};
  };
  auto run = [](const Tensors& in, const Attributes& a) {
    return Tensors{at::gelu(in[0], a.at("approximate") != 0 ? "tanh" : "none")};
  };
  r.eager = run;
  r.oracle = run;  // on float64 inputs
  return r;
}

}  // namespace

OpSignature gelu_signature() { return gelu_op(false); }
OpReference gelu_reference() { return gelu_ref(); }
OpSignature gelu_tanh_signature() { return gelu_op(true); }
OpReference gelu_tanh_reference() { return gelu_ref(); }

}  // namespace kgate
