// softmax and log_softmax (dim=-1) over the rows of x:[B, N]: one signature and input builder,
// two references.
// NaN contract (as ATen): a row holding a NaN, a +Inf, or only -Inf is NaN everywhere; for
// log_softmax a -Inf element of an otherwise finite row gives -Inf.
#include <ATen/ops/log_softmax.h>
#include <ATen/ops/softmax.h>

#include "references/op_reference.hpp"

namespace kgate {
namespace {

OpSignature row_op(const std::string& name) {
  OpSignature op;
  op.name = name;
  op.summary = "y = " + name + "(x, dim=-1) over rows of x:[B,N]";
  op.inputs = {{"x", {"B", "N"}}};
  op.outputs = {{"y", {"B", "N"}}};
  op.min_bytes_read = "bytes_x";
  op.min_bytes_written = "bytes_y";
  op.symbols = {{"B", 1, 65536, 512}, {"N", 1, 262144, 8192}};
  op.reduced_symbol = "N";
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  for (DType d : op.dtypes) op.tolerance[d] = assert_close_tolerance(d);
  op.attributes = {{"dim", -1}};
  op.nan_contract = NanContract::propagate;
  op.deterministic = true;
  return op;
}

Tensors row_inputs(const Case& c, const OpSignature& op, at::Device device) {
  const auto shape = concrete_shape(op.inputs[0].shape, c);
  // Logits up to half the dtype's max: exp must be taken after subtracting the row max.
  const double extreme = 0.5 * dtype_max(c.dtype);
  return Tensors{apply_layout(make_values(c.values, shape, c.dtype, c.seed, extreme, device),
                              c.layout, device)};
}

int64_t dim_of(const Attributes& a) { return static_cast<int64_t>(a.at("dim")); }

}  // namespace

OpSignature softmax_signature() { return row_op("softmax"); }

OpReference softmax_reference() {
  OpReference r;
  r.make_inputs = row_inputs;
  r.eager = [](const Tensors& in, const Attributes& a) {
    return Tensors{at::softmax(in[0], dim_of(a))};
  };
  r.oracle = [](const Tensors& in, const Attributes& a) {
    return Tensors{at::softmax(in[0], dim_of(a), at::kDouble)};
  };
  return r;
}

OpSignature log_softmax_signature() { return row_op("log_softmax"); }

OpReference log_softmax_reference() {
  OpReference r;
  r.make_inputs = row_inputs;
  r.eager = [](const Tensors& in, const Attributes& a) {
    return Tensors{at::log_softmax(in[0], dim_of(a))};
  };
  r.oracle = [](const Tensors& in, const Attributes& a) {
    return Tensors{at::log_softmax(in[0], dim_of(a), at::kDouble)};
  };
  return r;
}

}  // namespace kgate
