// The device code of softmax_block: row softmax over x:[B,N], the last dim contiguous. Compiled by
// nvcc into the in-tree kernel (kernels/softmax/softmax_block.cu) and by NVRTC as package
// softmax_block_pkg, so checking the package checks this code. NVRTC-compatible: no host headers.
//   softmax_warp_rows:  one warp per row, the row held in registers (N <= 32 * kElems);
//   softmax_block_rows: one kSoftmaxBlock-thread block per row, the row held in registers
//                       (N <= kSoftmaxBlock * kElems);
//   softmax_smem_rows:  one block per row, the row staged in shared memory as float (N floats of
//                       dynamic shared memory), 16-byte vector accesses when kVec;
//   softmax_long_rows:  one block per row, an online (max, sum) pass then a write pass.
// Accumulation in float. NaN and Inf as the eager reference: a NaN or +Inf in a row, or a row of
// only -Inf, makes the row NaN. Rows may start anywhere except in the kVec path (16-byte aligned
// rows, N a whole number of vectors).
#pragma once

#include "kgate_device.cuh"

namespace kgate_device {

/// Rows per block of softmax_warp_rows (one warp each).
constexpr int kSoftmaxWarpRowsPerBlock = 4;
/// Threads per block of the block-per-row kernels.
constexpr int kSoftmaxBlock = 1024;

/// Rows of at most kElems * 32 elements; blocks of 32 * kSoftmaxWarpRowsPerBlock threads.
template <typename T, int kElems>
__global__ void softmax_warp_rows(const T* __restrict__ x, T* __restrict__ y, i64 rows, int n,
                                  i64 x_row_stride, i64 y_row_stride) {
  const int lane = threadIdx.x & 31;
  const i64 row = static_cast<i64>(blockIdx.x) * kSoftmaxWarpRowsPerBlock + (threadIdx.x >> 5);
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
  for (int i = 0; i < kElems; ++i) {
    const int c = i * 32 + lane;
    v[i] = c < n ? expf(v[i] - m) : 0.f;
    s += v[i];
  }
  s = warp_sum(s);
  const float inv = 1.f / s;
#pragma unroll
  for (int i = 0; i < kElems; ++i) {
    const int c = i * 32 + lane;
    if (c < n) yr[c] = from_float<T>(v[i] * inv);
  }
}

/// Row blockIdx.x of at most kElems * kSoftmaxBlock elements.
template <typename T, int kElems>
__global__ void __launch_bounds__(kSoftmaxBlock)
    softmax_block_rows(const T* __restrict__ x, T* __restrict__ y, int n, i64 x_row_stride,
                       i64 y_row_stride) {
  __shared__ float scratch[32];
  const T* xr = x + static_cast<i64>(blockIdx.x) * x_row_stride;
  T* yr = y + static_cast<i64>(blockIdx.x) * y_row_stride;
  float v[kElems];
  float m = -infinity();
#pragma unroll
  for (int i = 0; i < kElems; ++i) {
    const int c = i * kSoftmaxBlock + threadIdx.x;
    v[i] = c < n ? to_float(xr[c]) : -infinity();
    m = fmaxf(m, v[i]);
  }
  m = block_reduce<true>(m, scratch);
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < kElems; ++i) {
    const int c = i * kSoftmaxBlock + threadIdx.x;
    v[i] = c < n ? expf(v[i] - m) : 0.f;
    s += v[i];
  }
  s = block_reduce<false>(s, scratch);
  const float inv = 1.f / s;
#pragma unroll
  for (int i = 0; i < kElems; ++i) {
    const int c = i * kSoftmaxBlock + threadIdx.x;
    if (c < n) yr[c] = from_float<T>(v[i] * inv);
  }
}

/// Row blockIdx.x staged in n floats of dynamic shared memory. Each thread touches only its own
/// positions, so the passes need no barrier beyond the ones inside the reductions. kVec: 16-byte
/// loads and stores; element j of vector i sits at row[j * chunks + i], so a warp's shared
/// accesses hit distinct banks.
template <typename T, bool kVec>
__global__ void __launch_bounds__(kSoftmaxBlock)
    softmax_smem_rows(const T* __restrict__ x, T* __restrict__ y, int n, i64 x_row_stride,
                      i64 y_row_stride) {
  extern __shared__ float row[];
  __shared__ float scratch[32];
  constexpr int kV = kVec ? Vec16<T>::kN : 1;
  const T* xr = x + static_cast<i64>(blockIdx.x) * x_row_stride;
  T* yr = y + static_cast<i64>(blockIdx.x) * y_row_stride;
  const int chunks = n / kV;
  float m = -infinity();
#pragma unroll 4
  for (int i = threadIdx.x; i < chunks; i += blockDim.x) {
    Vec16<T> v;
    if constexpr (kVec) {
      v = reinterpret_cast<const Vec16<T>*>(xr)[i];
    } else {
      v.v[0] = xr[i];
    }
#pragma unroll
    for (int j = 0; j < kV; ++j) {
      const float f = to_float(v.v[j]);
      row[j * chunks + i] = f;
      m = fmaxf(m, f);
    }
  }
  m = block_reduce<true>(m, scratch);
  float s = 0.f;
  for (int i = threadIdx.x; i < chunks; i += blockDim.x) {
#pragma unroll
    for (int j = 0; j < kV; ++j) {
      const float e = expf(row[j * chunks + i] - m);
      row[j * chunks + i] = e;
      s += e;
    }
  }
  s = block_reduce<false>(s, scratch);
  const float inv = 1.f / s;
  for (int i = threadIdx.x; i < chunks; i += blockDim.x) {
    Vec16<T> v;
#pragma unroll
    for (int j = 0; j < kV; ++j) v.v[j] = from_float<T>(row[j * chunks + i] * inv);
    if constexpr (kVec) {
      reinterpret_cast<Vec16<T>*>(yr)[i] = v;
    } else {
      yr[i] = v.v[0];
    }
  }
}

/// Row blockIdx.x of any length: an online (max, sum) pass, then the write pass (two reads).
template <typename T>
__global__ void __launch_bounds__(kSoftmaxBlock)
    softmax_long_rows(const T* __restrict__ x, T* __restrict__ y, i64 n, i64 x_row_stride,
                      i64 y_row_stride) {
  __shared__ float scratch[32];
  const T* xr = x + static_cast<i64>(blockIdx.x) * x_row_stride;
  T* yr = y + static_cast<i64>(blockIdx.x) * y_row_stride;
  float m = -infinity(), s = 0.f;
  for (i64 c = threadIdx.x; c < n; c += blockDim.x) {
    const float v = to_float(xr[c]);
    if (v == -infinity()) continue;  // contributes exp(-inf) = 0
    if (v > m) {
      s = s * expf(m - v) + 1.f;
      m = v;
    } else {
      s += expf(v - m);  // NaN v lands here and makes s NaN, as the reference does
    }
  }
  const float row_max = block_reduce<true>(m, scratch);
  if (m != -infinity()) s *= expf(m - row_max);  // else s is 0, or NaN from a NaN element: keep it
  if (row_max == infinity() || row_max == -infinity())
    s = __int_as_float(0x7fc00000);  // inf - inf: NaN
  const float total = block_reduce<false>(s, scratch);
  const float inv = 1.f / total;
  for (i64 c = threadIdx.x; c < n; c += blockDim.x)
    yr[c] = from_float<T>(expf(to_float(xr[c]) - row_max) * inv);
}

}  // namespace kgate_device
