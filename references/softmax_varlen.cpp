// softmax_varlen: softmax over each member of a packed batch of S variable-length sequences.
// x:[T] holds the members back to back; cu_seqlens:[S+1] (int32, contiguous) holds their offsets
// (cu_seqlens[0] = 0, non-decreasing, cu_seqlens[S] = T), as FlashAttention's varlen API does;
// y[cu[s]:cu[s+1]] = softmax(x[cu[s]:cu[s+1]]). y:[T].
// Offsets are drawn from the case's seed: member weights are exponential, each member is empty
// with probability 1/4, and in half of the cases one member gets about half of T (a very long
// member). T may be 0 (every member empty). Layouts apply to x only.
// NaN contract (as softmax): a member holding a NaN, a +Inf, or only -Inf is NaN everywhere.
#include <ATen/ops/empty.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/tensor.h>
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/rng.hpp"
#include "references/op_reference.hpp"

namespace kgate {

OpSignature softmax_varlen_signature() {
  OpSignature op;
  op.name = "softmax_varlen";
  op.summary =
      "y[cu[s]:cu[s+1]] = softmax(x[cu[s]:cu[s+1]]) for packed x:[T], cu_seqlens:[S+1] (int32)";
  op.inputs = {{"x", {"T"}}, {"cu_seqlens", {"S+1"}}};
  op.outputs = {{"y", {"T"}}};
  op.min_bytes_read = "bytes_x + bytes_cu_seqlens";
  op.min_bytes_written = "bytes_y";
  op.symbols = {{"S", 1, 4096, 64}, {"T", 0, 2097152, 65536}};
  op.reduced_symbol = "T";
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  for (DType d : op.dtypes) op.tolerance[d] = assert_close_tolerance(d);
  op.nan_contract = NanContract::propagate;
  op.deterministic = true;
  return op;
}

namespace {

std::vector<int64_t> make_offsets(const Case& c, int64_t s, int64_t t) {
  Rng rng(derive_seed(c.seed, "cu_seqlens", 0));
  std::vector<double> weight(static_cast<size_t>(s));
  double total = 0;
  for (auto& w : weight) {
    w = rng.uniform() < 0.25 ? 0.0 : -std::log(1.0 - rng.uniform());
    total += w;
  }
  if (rng.coin()) {
    const auto k = static_cast<size_t>(rng.uniform_int(0, s - 1));
    const double boost = std::max(1.0, total);  // this member gets about half of T
    weight[k] += boost;
    total += boost;
  }
  if (total <= 0) {  // every member empty so far: the last one takes all of T
    weight.back() = 1;
    total = 1;
  }
  std::vector<int64_t> cu(static_cast<size_t>(s) + 1, 0);
  double running = 0;
  for (int64_t i = 0; i < s; ++i) {
    running += weight[static_cast<size_t>(i)];
    cu[static_cast<size_t>(i) + 1] =
        i + 1 == s
            ? t
            : std::min<int64_t>(
                  t, static_cast<int64_t>(std::floor(static_cast<double>(t) * running / total)));
  }
  for (size_t i = 1; i < cu.size(); ++i) cu[i] = std::max(cu[i], cu[i - 1]);
  return cu;
}

// Softmax of every non-empty member; `x` may be float64 (oracle) or the case's dtype (eager).
at::Tensor varlen_softmax(const at::Tensor& x, const at::Tensor& cu_seqlens) {
  const auto cu = cu_seqlens.to(at::kCPU).to(at::kLong).contiguous();
  const int64_t* o = cu.data_ptr<int64_t>();
  auto y = at::empty({x.size(0)}, x.options().memory_format(at::MemoryFormat::Contiguous));
  for (int64_t s = 0; s + 1 < cu.numel(); ++s) {
    const int64_t len = o[s + 1] - o[s];
    if (len > 0) y.narrow(0, o[s], len).copy_(at::softmax(x.narrow(0, o[s], len), 0));
  }
  return y;
}

}  // namespace

OpReference softmax_varlen_reference() {
  OpReference r;
  r.make_inputs = [](const Case& c, const OpSignature& op, at::Device device) {
    const int64_t t = c.dim("T"), s = c.dim("S");
    const auto x = make_values(c.values, concrete_shape(op.inputs[0].shape, c), c.dtype, c.seed,
                               0.5 * dtype_max(c.dtype), device);
    const auto cu = make_offsets(c, s, t);
    const auto cu32 = at::tensor(cu, at::TensorOptions().dtype(at::kLong)).to(at::kInt);
    return Tensors{apply_layout(x, c.layout, device), cu32.to(device)};
  };
  auto run = [](const Tensors& in, const Attributes&) {
    return Tensors{varlen_softmax(in[0], in[1])};
  };
  r.eager = run;
  r.oracle = run;  // on float64 inputs (offsets upcast too: varlen_softmax casts them back)
  return r;
}

}  // namespace kgate
