// The device code of log_softmax_block: row log_softmax over x:[B,N], the last dim contiguous.
// Compiled by nvcc into the in-tree kernel (log_softmax_block, kgate_add_kernel PACKAGE) and by
// NVRTC as package log_softmax_block_pkg, so checking the package checks this code.
// NVRTC-compatible: no host headers.
//   log_softmax_warp_rows:  one warp per row, the row held in registers (one read, one write);
//   log_softmax_block_rows: one block per row, three passes over the row (max, sum, write).
// Accumulation in float; y = (x - max) - log(sum(exp(x - max))) as ATen computes it, so NaN and
// Inf follow ATen: a NaN or a +Inf in a row, or a row of only -Inf, makes the whole row NaN (the
// max skips NaN but exp(NaN - max) and exp(Inf - Inf) do not); a -Inf element gives -Inf.
// Rows may start anywhere (scalar accesses).
#pragma once

#include "kgate_device.cuh"

namespace kgate_device {

/// Rows per block of log_softmax_warp_rows (one warp each).
constexpr int kLogSoftmaxWarpRowsPerBlock = 4;

/// Rows of at most kElems * 32 elements; blocks of 32 * kLogSoftmaxWarpRowsPerBlock threads.
template <typename T, int kElems>
__global__ void log_softmax_warp_rows(const T* __restrict__ x, T* __restrict__ y, i64 rows, int n,
                                      i64 x_row_stride, i64 y_row_stride) {
  const int lane = threadIdx.x & 31;
  const i64 row = static_cast<i64>(blockIdx.x) * kLogSoftmaxWarpRowsPerBlock + (threadIdx.x >> 5);
  if (row >= rows) return;
  const T* xr = x + row * x_row_stride;
  T* yr = y + row * y_row_stride;
  float v[kElems];
  float m = -infinity();
#pragma unroll
  for (int i = 0; i < kElems; ++i) {
    const int c = i * 32 + lane;
    v[i] = c < n ? to_float(xr[c]) : -infinity();
    m = fmaxf(m, v[i]);
  }
  m = warp_max(m);
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < kElems; ++i)
    if (i * 32 + lane < n) s += expf(v[i] - m);
  const float log_sum = logf(warp_sum(s));
#pragma unroll
  for (int i = 0; i < kElems; ++i) {
    const int c = i * 32 + lane;
    if (c < n) yr[c] = from_float<T>((v[i] - m) - log_sum);
  }
}

/// Row blockIdx.x, any length.
template <typename T>
__global__ void log_softmax_block_rows(const T* __restrict__ x, T* __restrict__ y, i64 n,
                                       i64 x_row_stride, i64 y_row_stride) {
  __shared__ float scratch[32];
  const T* xr = x + static_cast<i64>(blockIdx.x) * x_row_stride;
  T* yr = y + static_cast<i64>(blockIdx.x) * y_row_stride;
  float m = -infinity();
  for (i64 c = threadIdx.x; c < n; c += blockDim.x) m = fmaxf(m, to_float(xr[c]));
  m = block_reduce<true>(m, scratch);
  float s = 0.f;
  for (i64 c = threadIdx.x; c < n; c += blockDim.x) s += expf(to_float(xr[c]) - m);
  const float log_sum = logf(block_reduce<false>(s, scratch));
  for (i64 c = threadIdx.x; c < n; c += blockDim.x)
    yr[c] = from_float<T>((to_float(xr[c]) - m) - log_sum);
}

}  // namespace kgate_device
