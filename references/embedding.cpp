// embedding: y[t, :] = weight[indices[t], :] for weight:[V, D] (the case's dtype) and indices:[T]
// (int64, always within [0, V)); y:[T, D]. T may be 0.
// Indices are integers, drawn here (not by make_values) from the case's seed: uniform in [0, V),
// with the last row V-1 first and row 0 last (the table's edges), for every family; all_equal
// makes every index V-1, clustered_max sends half of them to V-1 (repeated rows). The weight gets
// the case's value family. Layouts apply to both inputs.
// Tolerance: exact (atol = rtol = 0) — a gather copies bits, so any difference is a wrong row.
// NaN contract: the NaN/Inf positions of the gathered rows, exactly.
#include <ATen/ops/embedding.h>
#include <ATen/ops/tensor.h>
#include <algorithm>
#include <vector>

#include "core/rng.hpp"
#include "references/op_reference.hpp"

namespace kgate {

OpSignature embedding_signature() {
  OpSignature op;
  op.name = "embedding";
  op.summary = "y = weight[indices] for weight:[V,D], indices:[T] (int64 in [0,V)), y:[T,D]";
  op.inputs = {{"weight", {"V", "D"}}, {"indices", {"T"}}};
  op.outputs = {{"y", {"T", "D"}}};
  // A gather: the rows it reads are at most T of the table (repeated indices read one row).
  op.min_bytes_read = "bytes_indices";
  op.min_bytes_written = "bytes_y";
  op.symbols = {{"T", 0, 65536, 1024}, {"V", 1, 262144, 4096}, {"D", 1, 16384, 512}};
  op.reduced_symbol = "D";
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  for (DType d : op.dtypes) op.tolerance[d] = Tolerance{0, 0};
  op.nan_contract = NanContract::propagate;
  op.deterministic = true;
  // Timed on LLM-like lookups (the rows-by-columns default suits row ops, not gathers).
  op.speed_shapes = {{{"T", 4096}, {"V", 32000}, {"D", 4096}},
                     {{"T", 512}, {"V", 128256}, {"D", 2048}}};
  return op;
}

namespace {

at::Tensor make_indices(const Case& c, int64_t t, int64_t v) {
  Rng rng(derive_seed(c.seed, "indices", 0));
  std::vector<int64_t> idx(static_cast<size_t>(t));
  for (auto& i : idx) i = rng.uniform_int(0, v - 1);
  if (c.values == Values::all_equal) std::fill(idx.begin(), idx.end(), v - 1);
  if (c.values == Values::clustered_max)
    for (auto& i : idx)
      if (rng.coin()) i = v - 1;
  if (t >= 2) {
    idx.front() = v - 1;
    idx.back() = 0;
  }
  return at::tensor(idx, at::TensorOptions().dtype(at::kLong)).reshape({t});
}

}  // namespace

OpReference embedding_reference() {
  OpReference r;
  r.make_inputs = [](const Case& c, const OpSignature& op, at::Device device) {
    const auto vd = concrete_shape(op.inputs[0].shape, c);
    const auto weight =
        make_values(c.values, vd, c.dtype, c.seed, 0.5 * dtype_max(c.dtype), device);
    const auto indices = make_indices(c, c.dim("T"), vd[0]);
    return Tensors{apply_layout(weight, c.layout, device), apply_layout(indices, c.layout, device)};
  };
  r.eager = [](const Tensors& in, const Attributes&) {
    return Tensors{at::embedding(in[0], in[1])};
  };
  r.oracle = [](const Tensors& in, const Attributes&) {
    return Tensors{
        at::embedding(in[0], in[1].to(at::kLong))};  // the caller upcast indices to float64
  };
  return r;
}

}  // namespace kgate
