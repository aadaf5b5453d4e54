// The device code of the GEMM controls (tests/controls/matmul_orders.cu, nvcc) and of their
// packages (tests/controls/packages/, NVRTC, FMA contraction on as NVRTC's default): correct GEMMs
// whose K sums run in orders other than eager's (cuBLAS). bf16, f16 and f32 in, float32
// accumulation, out in the input dtype, a:[M,K], b:[K,N], out:[M,N] of any strides (elements).
// NVRTC-compatible: no host headers.
//   matmul_naive          one thread per output (16 x 16 threads), K summed 0..K-1 with fmaf
//   matmul_smem_tiled     32 x 32 threads, 32 x 32 tiles in shared memory: a partial sum per
//                         32-deep K slice, the slices' partials added to the total in order
//   matmul_register_2d    64 threads, a 64 x 64 block tile, 8-deep K slices, an 8 x 8 micro-tile
//                         of accumulators per thread (outer-product updates), K summed 0..K-1
//   matmul_k_interleaved  16 x 16 threads, four partial sums per output over k mod 4, added as a
//                         tree at the end ((s0 + s1) + (s2 + s3))
//   matmul_split_k_*      K cut into S chunks (grid.z), one float32 partial per chunk in a
//                         workspace [S, M, N], then a second kernel adding the S partials in chunk
//                         order (deterministic: no atomics)
#pragma once

#include "kgate_device.cuh"

namespace kgate_controls {

using kgate_device::from_float;
using kgate_device::i64;
using kgate_device::to_float;

/// The sizes and strides every kernel below takes, in this order, as kernel parameters.
#define KGATE_GEMM_PARAMS \
  i64 m, i64 n, i64 k, i64 a_row, i64 a_col, i64 b_row, i64 b_col, i64 o_row, i64 o_col
#define KGATE_GEMM_LOAD_A(r, kx) ((r) < m && (kx) < k ? to_float(a[(r)*a_row + (kx)*a_col]) : 0.f)
#define KGATE_GEMM_LOAD_B(kx, c) ((kx) < k && (c) < n ? to_float(b[(kx)*b_row + (c)*b_col]) : 0.f)

constexpr int kTile32 = 32, kTile16 = 16;
constexpr int kBlock2d = 64, kDepth2d = 8, kMicro = 8, kThreads2d = 64;

template <typename T>
__global__ void matmul_naive(const T* a, const T* b, T* out, KGATE_GEMM_PARAMS) {
  const i64 r = static_cast<i64>(blockIdx.y) * 16 + threadIdx.y;
  const i64 c = static_cast<i64>(blockIdx.x) * 16 + threadIdx.x;
  if (r >= m || c >= n) return;
  float acc = 0.f;
  for (i64 kx = 0; kx < k; ++kx)
    acc = fmaf(to_float(a[r * a_row + kx * a_col]), to_float(b[kx * b_row + c * b_col]), acc);
  out[r * o_row + c * o_col] = from_float<T>(acc);
}

template <typename T>
__global__ void matmul_smem_tiled(const T* a, const T* b, T* out, KGATE_GEMM_PARAMS) {
  __shared__ float as[kTile32][kTile32 + 1];
  __shared__ float bs[kTile32][kTile32 + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const i64 r = static_cast<i64>(blockIdx.y) * kTile32 + ty;
  const i64 c = static_cast<i64>(blockIdx.x) * kTile32 + tx;
  float acc = 0.f;
  for (i64 k0 = 0; k0 < k; k0 += kTile32) {
    as[ty][tx] = KGATE_GEMM_LOAD_A(r, k0 + tx);
    bs[ty][tx] = KGATE_GEMM_LOAD_B(k0 + ty, c);
    __syncthreads();
    float part = 0.f;  // this slice's partial sum, added to the total once
#pragma unroll
    for (int kk = 0; kk < kTile32; ++kk) part = fmaf(as[ty][kk], bs[kk][tx], part);
    acc += part;
    __syncthreads();
  }
  if (r < m && c < n) out[r * o_row + c * o_col] = from_float<T>(acc);
}

template <typename T>
__global__ void matmul_register_2d(const T* a, const T* b, T* out, KGATE_GEMM_PARAMS) {
  __shared__ float as[kDepth2d][kBlock2d + 4];  // transposed: as[k][row]
  __shared__ float bs[kDepth2d][kBlock2d + 4];
  const i64 row0 = static_cast<i64>(blockIdx.y) * kBlock2d,
            col0 = static_cast<i64>(blockIdx.x) * kBlock2d;
  const int tr = threadIdx.x / (kBlock2d / kMicro), tc = threadIdx.x % (kBlock2d / kMicro);
  float acc[kMicro][kMicro] = {};
  for (i64 k0 = 0; k0 < k; k0 += kDepth2d) {
    for (int e = threadIdx.x; e < kBlock2d * kDepth2d; e += kThreads2d) {
      const int rr = e / kDepth2d, ka = e % kDepth2d;  // consecutive threads: along a row of a
      as[ka][rr] = KGATE_GEMM_LOAD_A(row0 + rr, k0 + ka);
      const int kb = e / kBlock2d, cc = e % kBlock2d;  // consecutive threads: along a row of b
      bs[kb][cc] = KGATE_GEMM_LOAD_B(k0 + kb, col0 + cc);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kDepth2d; ++kk) {
      float ra[kMicro], rb[kMicro];
#pragma unroll
      for (int i = 0; i < kMicro; ++i) ra[i] = as[kk][tr * kMicro + i];
#pragma unroll
      for (int j = 0; j < kMicro; ++j) rb[j] = bs[kk][tc * kMicro + j];
#pragma unroll
      for (int i = 0; i < kMicro; ++i)
#pragma unroll
        for (int j = 0; j < kMicro; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kMicro; ++i)
#pragma unroll
    for (int j = 0; j < kMicro; ++j) {
      const i64 r = row0 + tr * kMicro + i, c = col0 + tc * kMicro + j;
      if (r < m && c < n) out[r * o_row + c * o_col] = from_float<T>(acc[i][j]);
    }
}

template <typename T>
__global__ void matmul_k_interleaved(const T* a, const T* b, T* out, KGATE_GEMM_PARAMS) {
  __shared__ float as[kTile16][kTile16 + 1];
  __shared__ float bs[kTile16][kTile16 + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const i64 r = static_cast<i64>(blockIdx.y) * kTile16 + ty;
  const i64 c = static_cast<i64>(blockIdx.x) * kTile16 + tx;
  float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;  // s_q sums the products of k = q mod 4
  for (i64 k0 = 0; k0 < k; k0 += kTile16) {
    as[ty][tx] = KGATE_GEMM_LOAD_A(r, k0 + tx);
    bs[ty][tx] = KGATE_GEMM_LOAD_B(k0 + ty, c);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTile16; kk += 4) {
      s0 = fmaf(as[ty][kk], bs[kk][tx], s0);
      s1 = fmaf(as[ty][kk + 1], bs[kk + 1][tx], s1);
      s2 = fmaf(as[ty][kk + 2], bs[kk + 2][tx], s2);
      s3 = fmaf(as[ty][kk + 3], bs[kk + 3][tx], s3);
    }
    __syncthreads();
  }
  if (r < m && c < n) out[r * o_row + c * o_col] = from_float<T>((s0 + s1) + (s2 + s3));
}

/// Chunk z = blockIdx.z of K, [z * chunk, min(K, (z + 1) * chunk)), summed sequentially (k
/// ascending, fmaf) into ws[z][r][c]; a chunk past K writes zeros. chunk is a multiple of 16.
template <typename T>
__global__ void matmul_split_k_partial(const T* a, const T* b, float* ws, KGATE_GEMM_PARAMS,
                                       i64 chunk) {
  __shared__ float as[kTile16][kTile16 + 1];
  __shared__ float bs[kTile16][kTile16 + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const i64 r = static_cast<i64>(blockIdx.y) * kTile16 + ty;
  const i64 c = static_cast<i64>(blockIdx.x) * kTile16 + tx;
  const i64 k_begin = static_cast<i64>(blockIdx.z) * chunk;
  const i64 k_end = k_begin + chunk < k ? k_begin + chunk : k;
  float acc = 0.f;
  for (i64 k0 = k_begin; k0 < k_end; k0 += kTile16) {
    as[ty][tx] = k0 + tx < k_end ? KGATE_GEMM_LOAD_A(r, k0 + tx) : 0.f;
    bs[ty][tx] = k0 + ty < k_end ? KGATE_GEMM_LOAD_B(k0 + ty, c) : 0.f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTile16; ++kk) acc = fmaf(as[ty][kk], bs[kk][tx], acc);
    __syncthreads();
  }
  if (r < m && c < n) ws[(static_cast<i64>(blockIdx.z) * m + r) * n + c] = acc;
}

/// out[r][c] = ws[0][r][c] + ws[1][r][c] + ... + ws[S-1][r][c], left to right.
template <typename T>
__global__ void matmul_split_k_reduce(const float* ws, T* out, i64 m, i64 n, i64 o_row, i64 o_col,
                                      int splits) {
  const i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x, mn = m * n;
  if (i >= mn) return;
  float acc = ws[i];
  for (int z = 1; z < splits; ++z) acc += ws[z * mn + i];
  out[(i / n) * o_row + (i % n) * o_col] = from_float<T>(acc);
}

#undef KGATE_GEMM_LOAD_A
#undef KGATE_GEMM_LOAD_B

}  // namespace kgate_controls
