// Controls on rms_norm (built in; y = x * rsqrt(mean(x^2) + eps) * weight over rows of x:[B,N]) on
// the cpu backend, f32, any strides, for CI machines without a GPU. Each must pass:
//   control_rms_norm_cpu_pairwise    the sum of squares pairwise in float: the row halved
//                                    recursively, runs of at most 8 squares summed left to right
//   control_rms_norm_cpu_sequential  the sum of squares left to right in float, the whole row (on a
//                                    long row of equal values its rounding errors add up: they
//                                    do not cancel)
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "runtime/kernel.hpp"

namespace kgate::controls {
namespace {

/// x[lo]^2 + ... + x[hi-1]^2 (stride xs), pairwise (kRun: 8) or left to right (kRun: 0).
template <int kRun>
float sum_squares(const float* x, int64_t xs, int64_t lo, int64_t hi) {
  if (kRun == 0 || hi - lo <= kRun) {
    float s = 0.f;
    for (int64_t j = lo; j < hi; ++j) s += x[j * xs] * x[j * xs];
    return s;
  }
  const int64_t mid = lo + (hi - lo) / 2;
  return sum_squares<kRun>(x, xs, lo, mid) + sum_squares<kRun>(x, xs, mid, hi);
}

template <int kRun>
void launch(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& w = call.inputs.at(1);
  const TensorView& y = call.outputs.at(0);
  if (x.dtype != DType::f32) throw Error(ErrorKind::usage, "control_rms_norm_cpu: only f32");
  const int64_t rows = x.sizes.at(0), n = x.sizes.at(1);
  const auto eps = static_cast<float>(call.attributes.at("eps"));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.as<const float>() + r * x.strides[0];
    float* yr = y.as<float>() + r * y.strides[0];
    const float inv_rms =
        1.f / std::sqrt(sum_squares<kRun>(xr, x.strides[1], 0, n) / static_cast<float>(n) + eps);
    for (int64_t j = 0; j < n; ++j)
      yr[j * y.strides[1]] = xr[j * x.strides[1]] * inv_rms * w.as<const float>()[j * w.strides[0]];
  }
}

KernelInfo info(const char* name, void (*fn)(const KernelCall&), std::vector<int64_t> tiles) {
  KernelInfo k;
  k.name = name;
  k.op = "rms_norm";
  k.backend = Backend::cpu;
  k.dtypes = {DType::f32};
  k.tile_sizes = std::move(tiles);
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;
  k.source = "tests/controls/rms_norm_cpu_pairwise.cpp";
  k.mutant = true;
  k.control = true;
  k.expected_catch = "control";
  k.launch = fn;
  return k;
}

KGATE_REGISTER_KERNEL(info("control_rms_norm_cpu_pairwise", launch<8>, {8}));
KGATE_REGISTER_KERNEL(info("control_rms_norm_cpu_sequential", launch<0>, {}));

}  // namespace
}  // namespace kgate::controls
