// The device code of fused_add_rms_norm_block (compiled into the build from this package; its
// mutants in kernels/fused_add_rms_norm/fused_add_rms_norm_block.cu) and of package
// fused_add_rms_norm_block_pkg. NVRTC-compatible: no host headers. One 256-thread block per row: r
// = x + residual is rounded to the dtype and stored, its squares summed in float; then y = r *
// rsqrt(mean(r^2) + eps) * weight, rounded once. Rows are contiguous (unit stride along H); rows
// may lie apart (any row stride). res_out may be res (the op writes the residual in place): each
// element is read and then written by the same thread, and neither pointer is __restrict__.
#pragma once

#include "kgate_device.cuh"

namespace kgate_device {

// kVariant 0: correct. 1 (mutant): the row's last H % 256 elements are skipped when H > 256.
// 2 (mutant): normalizes x instead of x + residual (residual_out is still right).
template <typename T, int kVariant>
__global__ void fused_add_rms_norm_rows(const T* __restrict__ x, const T* res,
                                        const T* __restrict__ w, T* __restrict__ y, T* res_out,
                                        i64 n, float eps, i64 x_row, i64 r_row, i64 y_row,
                                        i64 o_row) {
  __shared__ float scratch[32];
  const T* xr = x + static_cast<i64>(blockIdx.x) * x_row;
  const T* rr = res + static_cast<i64>(blockIdx.x) * r_row;
  T* yr = y + static_cast<i64>(blockIdx.x) * y_row;
  T* orow = res_out + static_cast<i64>(blockIdx.x) * o_row;
  const i64 end = kVariant == 1 && n > 256 ? n - n % 256 : n;
  float sq = 0.f;
  for (i64 j = threadIdx.x; j < end; j += blockDim.x) {
    const T r = from_float<T>(to_float(xr[j]) + to_float(rr[j]));
    orow[j] = r;
    const float v = kVariant == 2 ? to_float(xr[j]) : to_float(r);
    sq += v * v;
  }
  const float inv_rms = rsqrtf(block_reduce<false>(sq, scratch) / static_cast<float>(n) + eps);
  for (i64 j = threadIdx.x; j < end; j += blockDim.x) {
    const float v = kVariant == 2 ? to_float(xr[j]) : to_float(orow[j]);
    yr[j] = from_float<T>(v * inv_rms * to_float(w[j]));
  }
}

}  // namespace kgate_device
