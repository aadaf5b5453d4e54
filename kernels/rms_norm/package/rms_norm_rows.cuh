// The device code of rms_norm_block: rms_norm over the rows of x:[B,N] with weight:[N], any
// strides (scalar accesses). Compiled by nvcc into the in-tree kernel
// (kernels/rms_norm/rms_norm_block.cu) and by NVRTC as package rms_norm_block_pkg, so checking the
// package checks this code. NVRTC-compatible: no host headers.
// One block per row, two passes in float: ms = sum(x^2) / N, then y = x * rsqrt(ms + eps) * weight,
// rounded once. As the reference: a row with +-Inf (and no NaN) gets ms = Inf, rsqrt = 0, so y = 0
// except NaN (Inf * 0) at the Inf; a NaN makes the row NaN.
#pragma once

#include "kgate_device.cuh"

namespace kgate_device {

/// Row blockIdx.x of x; strides in elements.
template <typename T>
__global__ void rms_norm_rows(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                              i64 n, float eps, i64 x_row, i64 x_col, i64 w_stride, i64 y_row,
                              i64 y_col) {
  __shared__ float scratch[32];
  const T* xr = x + static_cast<i64>(blockIdx.x) * x_row;
  T* yr = y + static_cast<i64>(blockIdx.x) * y_row;
  float sq = 0.f;
  for (i64 j = threadIdx.x; j < n; j += blockDim.x) {
    const float v = to_float(xr[j * x_col]);
    sq += v * v;
  }
  const float inv_rms = rsqrtf(block_reduce<false>(sq, scratch) / static_cast<float>(n) + eps);
  for (i64 j = threadIdx.x; j < n; j += blockDim.x)
    yr[j * y_col] = from_float<T>(to_float(xr[j * x_col]) * inv_rms * to_float(w[j * w_stride]));
}

}  // namespace kgate_device
