// log_softmax(x, dim=-1) over the rows of x:[B, N].
// NaN contract (as ATen): a row holding a NaN, a +Inf, or only -Inf is NaN everywhere; a -Inf
// element of an otherwise finite row gives -Inf.
#include "references/op_reference.hpp"

namespace kgate {

OpSignature log_softmax_signature() {
  OpSignature op;
  op.name = "log_softmax";
  op.summary = "y = log_softmax(x, dim=-1) over rows of x:[B,N]";
  op.inputs = {{"x", {"B", "N"}}};
  op.outputs = {{"y", {"B", "N"}}};
  op.symbols = {{"B", 1, 65536, 512}, {"N", 1, 262144, 8192}};
  op.reduced_symbol = "N";
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  for (DType d : op.dtypes) op.tolerance[d] = assert_close_tolerance(d);
  op.attributes = {{"dim", -1}};
  op.nan_contract = NanContract::propagate;
  op.deterministic = true;
  return op;
}

OpReference log_softmax_reference() {
  OpReference r;
  r.make_inputs = [](const Case& c, const OpSignature& op, at::Device device) {
    const auto shape = concrete_shape(op.inputs[0].shape, c);
    // Logits up to half the dtype's max: only x - max(x) keeps exp finite.
    const double extreme = 0.5 * dtype_max(c.dtype);
    return Tensors{
        apply_layout(make_values(c.values, shape, c.dtype, c.seed, extreme), c.layout, device)};
  };
  r.eager = [](const Tensors& in, const Attributes& a) {
    return Tensors{at::log_softmax(in[0], static_cast<int64_t>(a.at("dim")))};
  };
  r.oracle = [](const Tensors& in, const Attributes& a) {
    return Tensors{at::log_softmax(in[0], static_cast<int64_t>(a.at("dim")), at::kDouble)};
  };
  return r;
}

}  // namespace kgate
