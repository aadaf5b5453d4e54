// The device code of layer_norm_block: layer_norm over the rows of x:[B,N] with weight:[N] and
// bias:[N], any strides (scalar accesses). Compiled by nvcc into the in-tree kernel
// (layer_norm_block, kgate_add_kernel PACKAGE) and by NVRTC as package layer_norm_block_pkg, so
// checking the package checks this code. NVRTC-compatible: no host headers.
// One block per row, three passes over the row in float:
//   1. s1 = sum(x - p) with p = the row's first element: differences from a value inside the row
//      keep a large mean from swallowing the spread (x - p is exact for x near p);
//   2. var = sum(((x - p) - mean_d)^2) / N (two-pass: no E[x^2] - E[x]^2 cancellation);
//   3. y = ((x - p) - mean_d) * rsqrt(var + eps) * weight + bias.
// A zero-variance row gives exactly bias (x - mean is exactly 0). A NaN or +-Inf in a row makes
// var NaN, so the whole row is NaN, as ATen's Welford reduction makes it.
#pragma once

#include "kgate_device.cuh"

namespace kgate_device {

/// Row blockIdx.x of x; strides in elements. Needs n >= 1.
template <typename T>
__global__ void layer_norm_rows(const T* __restrict__ x, const T* __restrict__ w,
                                const T* __restrict__ b, T* __restrict__ y, i64 n, float eps,
                                i64 x_row, i64 x_col, i64 w_stride, i64 b_stride, i64 y_row,
                                i64 y_col) {
  __shared__ float scratch[32];
  const T* xr = x + static_cast<i64>(blockIdx.x) * x_row;
  T* yr = y + static_cast<i64>(blockIdx.x) * y_row;
  const float p = to_float(xr[0]);
  float s1 = 0.f;
  for (i64 j = threadIdx.x; j < n; j += blockDim.x) s1 += to_float(xr[j * x_col]) - p;
  const float mean_d = block_reduce<false>(s1, scratch) / static_cast<float>(n);
  float s2 = 0.f;
  for (i64 j = threadIdx.x; j < n; j += blockDim.x) {
    const float d = (to_float(xr[j * x_col]) - p) - mean_d;
    s2 += d * d;
  }
  const float var = block_reduce<false>(s2, scratch) / static_cast<float>(n);
  const float rstd = rsqrtf(var + eps);
  for (i64 j = threadIdx.x; j < n; j += blockDim.x) {
    const float d = (to_float(xr[j * x_col]) - p) - mean_d;
    yr[j * y_col] = from_float<T>(d * rstd * to_float(w[j * w_stride]) + to_float(b[j * b_stride]));
  }
}

}  // namespace kgate_device
