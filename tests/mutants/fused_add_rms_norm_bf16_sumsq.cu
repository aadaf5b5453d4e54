// Mutant: fused_add_rms_norm (kernels/fused_add_rms_norm/package/fused_add_rms_norm.op.json) for
// bf16 whose per-thread sum of squares is kept in __nv_bfloat16. One 32-thread block per row:
// thread t sums r_j^2 for j = t, t + 32, ... with __hfma into a bf16 running sum (H/32 terms,
// each addition rounded to 8 significant bits); the 32 partials are then added in float (a warp
// shuffle tree). r = x + residual (rounded to bf16, written back in place) and y are otherwise
// computed as the correct kernel computes them.
//
// The numbers (a bf16 running sum S stops growing by a term t once t < ulp(S) / 2, i.e. once it
// holds about 2^8 terms of t's size; the bf16 tolerance of the conditioned rule is about
// 4 * 2^-7 = 3.1% of |y| against the float64 oracle; y is off by the relative error of
// 1/sqrt(sum), half that of the sum). The worst element of y against float64 (its own bf16
// rounding, up to 0.39%, included), on an H200, with x and residual N(0, 1) ("normal") or
// x ~ 1000 +- 62.5 as the op's norm values make it ("large mean"); a bf16 emulation agrees:
//   - typical rows (random family, H <= typical_max 4096): at most 128 terms per thread, y off
//     by <= 1.1% (normal) and <= 1.3% (large mean, extreme family) at H = 4096, <= 0.6% at
//     H = 1000. Passes.
//   - the longest rows (long family, H = 16384 and 16383, 512 terms per thread) with large-mean
//     values: r^2 ~ 1e6 ~ 2^20, so from S ~ 2^28 (268 terms) on, ulp(S) = 2^21 and a term counts
//     as 2^21 only when r > 1024 (about 35% of them), else 0: the sum comes out ~12% low and y
//     7.7% high, 2.5 times the allowance. Fails. (Constant x with N(0, 1) residuals, the
//     family's other rows, come out about 4% off: over it too.)
//   - H = 8192 (256 terms per thread): 1.9-2.2%, passes; the ragged family's rows of 16383 and
//     16384 with normal values come out 4.5% off, over the allowance, so ragged catches it
//     there as well.
// The long family must reject it. Correct twin: kernels/fused_add_rms_norm/
// fused_add_rms_norm_block.cu (float accumulation).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/common/kgate_device.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::mutants {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kThreads = 32;  // one warp per row: each thread sums H / 32 squares

/// res_out may be res (in place): each element is read, then written, by the same thread.
__global__ void fused_add_rms_norm_bf16_sumsq(const bf16* x, const bf16* res, const bf16* w,
                                              bf16* y, bf16* res_out, int64_t n, float eps,
                                              int64_t x_row, int64_t r_row, int64_t y_row,
                                              int64_t o_row) {
  const int64_t row = blockIdx.x;
  const bf16* xr = x + row * x_row;
  const bf16* rr = res + row * r_row;
  bf16* yr = y + row * y_row;
  bf16* orow = res_out + row * o_row;
  bf16 sum = __float2bfloat16_rn(0.f);
  for (int64_t j = threadIdx.x; j < n; j += kThreads) {
    const bf16 r = __float2bfloat16_rn(__bfloat162float(xr[j]) + __bfloat162float(rr[j]));
    orow[j] = r;
    sum = __hfma(r, r, sum);  // BUG: the running sum rounded to bf16 at every term
  }
  const float total = kgate_device::warp_sum(__bfloat162float(sum));
  const float inv_rms = rsqrtf(total / static_cast<float>(n) + eps);
  for (int64_t j = threadIdx.x; j < n; j += kThreads)
    yr[j] = __float2bfloat16_rn(__bfloat162float(orow[j]) * inv_rms * __bfloat162float(w[j]));
}

void launch(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& r = call.inputs.at(1);
  const TensorView& w = call.inputs.at(2);
  const TensorView& y = call.outputs.at(0);
  const TensorView& o = call.outputs.at(1);
  if (x.dtype != DType::bf16)
    throw Error(ErrorKind::usage, "mutant_fused_add_rms_norm_bf16_sumsq: only bf16");
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  fused_add_rms_norm_bf16_sumsq<<<static_cast<unsigned>(rows), kThreads, 0,
                                  static_cast<cudaStream_t>(call.stream)>>>(
      x.as<const bf16>(), r.as<const bf16>(), w.as<const bf16>(), y.as<bf16>(), o.as<bf16>(), n,
      static_cast<float>(call.attributes.at("eps")), x.strides[0], r.strides[0], y.strides[0],
      o.strides[0]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_fused_add_rms_norm_bf16_sumsq";
  k.op = "fused_add_rms_norm";
  k.backend = Backend::cuda;
  k.dtypes = {DType::bf16};
  k.tile_sizes = {kThreads};
  k.accepts_strided = false;  // unit stride along H; rows may lie apart
  k.accepts_unaligned = true;
  k.source = "tests/mutants/fused_add_rms_norm_bf16_sumsq.cu";
  k.mutant = true;
  k.control = false;
  k.expected_catch = "long";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
