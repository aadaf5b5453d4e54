// adaptive_avg_pool2d: x:[B, C, H, W] -> y:[B, C, OH, OW]; output cell (i, j) averages the window
// rows [floor(i*H/OH), ceil((i+1)*H/OH)) and columns [floor(j*W/OW), ceil((j+1)*W/OW)) (windows
// overlap when OH does not divide H; OH > H repeats rows).
// OH and OW appear in no input: the reference reads them from the call's attributes, where
// call_attributes() puts every shape symbol of the case.
// Extreme values: positive magnitudes up to min(dtype max / 2, 1e30): a window sums up to 512 * 512
// values in float and must not overflow (f16 inputs accumulate in float, so half their max is
// fine). Positive, because a sum of large values of both signs can cancel to a result far below its
// terms, where two correct summation orders differ by more than any relative tolerance and atol is
// negligible; same-sign sums test the overflow this family is for.
// Tolerance: f16/bf16 as assert_close; f32 atol = rtol = 1e-5 (assert_close: 1e-5, 1.3e-6). For a
// 1x1 output ATen averages with at::mean (a tree reduction), while a kernel typically sums its
// window in order; the two float sums of n values differ by about 0.1 * eps * sqrt(n) relative
// (~1e-6 for a 64x64 window, ~3e-6 for 512x64), which 1.3e-6 does not absorb once |y| >> 1.
// NaN contract (as ATen): a window with a NaN, or with both +Inf and -Inf, averages to NaN; one
// with only +Inf (-Inf) to +Inf (-Inf).
#include <ATen/ops/adaptive_avg_pool2d.h>
#include <ATen/ops/mean.h>
#include <algorithm>

#include "core/error.hpp"
#include "references/op_reference.hpp"

namespace kgate {

OpSignature adaptive_avg_pool2d_signature() {
  OpSignature op;
  op.name = "adaptive_avg_pool2d";
  op.summary = "y = adaptive_avg_pool2d(x, [OH, OW]) for x:[B,C,H,W], y:[B,C,OH,OW]";
  op.inputs = {{"x", {"B", "C", "H", "W"}}};
  op.outputs = {{"y", {"B", "C", "OH", "OW"}}};
  op.min_bytes_read = "bytes_x";
  op.min_bytes_written = "bytes_y";
  op.symbols = {{"B", 1, 64, 8},   {"C", 1, 512, 64}, {"H", 1, 512, 64},
                {"W", 1, 512, 64}, {"OH", 1, 64, 8},  {"OW", 1, 64, 8}};
  op.reduced_symbol = "W";
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  for (DType d : op.dtypes) op.tolerance[d] = assert_close_tolerance(d);
  op.tolerance[DType::f32] = Tolerance{1e-5, 1e-5};  // summation order of large windows, see above
  op.nan_contract = NanContract::propagate;
  op.deterministic = true;
  // Timed on CNN-like pools: a 28x28 map to 7x7, and a global pool of a 7x7 map.
  op.speed_shapes = {{{"B", 32}, {"C", 512}, {"H", 28}, {"W", 28}, {"OH", 7}, {"OW", 7}},
                     {{"B", 64}, {"C", 512}, {"H", 7}, {"W", 7}, {"OH", 1}, {"OW", 1}}};
  return op;
}

OpReference adaptive_avg_pool2d_reference() {
  OpReference r;
  r.make_inputs = [](const Case& c, const OpSignature& op, at::Device device) {
    const auto shape = concrete_shape(op.inputs[0].shape, c);
    const double extreme = std::min(0.5 * dtype_max(c.dtype), 1e30);
    auto x = make_values(c.values, shape, c.dtype, c.seed, extreme, device);
    if (c.values == Values::extreme) x = x.abs();
    return Tensors{apply_layout(x, c.layout, device)};
  };
  auto run = [](const Tensors& in, const Attributes& a) {
    const auto oh = a.find("OH"), ow = a.find("OW");
    if (oh == a.end() || ow == a.end())
      throw Error(ErrorKind::internal,
                  "adaptive_avg_pool2d: the call's attributes lack OH/OW "
                  "(pass call_attributes(op, case))");
    return Tensors{at::adaptive_avg_pool2d(
        in[0], {static_cast<int64_t>(oh->second), static_cast<int64_t>(ow->second)})};
  };
  r.eager = run;
  r.oracle = run;  // on float64 inputs
  return r;
}

}  // namespace kgate
