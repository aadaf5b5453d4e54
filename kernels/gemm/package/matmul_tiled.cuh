// The device code of matmul_tiled (compiled into the build from this package; its mutants in
// kernels/gemm/matmul_tiled.cu) and of package matmul_tiled_pkg. NVRTC-compatible: no host headers.
// 64 x 64 output tiles (grid: ceil(N/64) x ceil(M/64), 256 threads), 16-deep slices of K staged in
// shared memory as float, 4 x 4 outputs per thread, float32 accumulation; a and b of any strides.
#pragma once

#include "kgate_device.cuh"

namespace kgate_device {

constexpr int kMatmulTile = 64, kMatmulDepth = 16, kMatmulThreads = 256;

// kVariant 0: correct. Mutants: 1 never adds the last K % 16 products, 2 rounds the accumulator
// to the storage dtype after every slice.
template <typename T, int kVariant>
__global__ void matmul_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out,
                              i64 m, i64 n, i64 k, i64 a_row, i64 a_col, i64 b_row, i64 b_col,
                              i64 o_row, i64 o_col) {
  __shared__ float as[kMatmulDepth][kMatmulTile + 1];
  __shared__ float bs[kMatmulDepth][kMatmulTile + 1];
  const i64 row0 = static_cast<i64>(blockIdx.y) * kMatmulTile,
            col0 = static_cast<i64>(blockIdx.x) * kMatmulTile;
  const int tr = threadIdx.x / 16,
            tc = threadIdx.x % 16;  // this thread: rows tr + 16 i, cols tc + 16 j
  float acc[4][4] = {};
  const i64 k_end = kVariant == 1 ? k / kMatmulDepth * kMatmulDepth : k;
  for (i64 k0 = 0; k0 < k_end; k0 += kMatmulDepth) {
    for (int e = threadIdx.x; e < kMatmulDepth * kMatmulTile; e += kMatmulThreads) {
      const int kk = e / kMatmulTile, rc = e % kMatmulTile;
      const i64 r = row0 + rc, kx = k0 + kk, c = col0 + rc;
      as[kk][rc] = r < m && kx < k_end ? to_float(a[r * a_row + kx * a_col]) : 0.f;
      bs[kk][rc] = c < n && kx < k_end ? to_float(b[kx * b_row + c * b_col]) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kMatmulDepth; ++kk)
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          acc[i][j] = fmaf(as[kk][tr + 16 * i], bs[kk][tc + 16 * j], acc[i][j]);
    if (kVariant == 2)
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = to_float(from_float<T>(acc[i][j]));
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const i64 r = row0 + tr + 16 * i, c = col0 + tc + 16 * j;
      if (r < m && c < n) out[r * o_row + c * o_col] = from_float<T>(acc[i][j]);
    }
}

}  // namespace kgate_device
