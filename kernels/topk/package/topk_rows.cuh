// The device code of topk_rows (kernels/topk/topk_rows.cu) and of package topk_rows_pkg.
// NVRTC-compatible: no host headers. One block per row makes K passes; pass k finds the largest key
// below the key pass k-1 found. A key orders values as torch.topk does (NaN above +Inf, -0.0 equal
// to +0.0) and breaks ties by the lower index, so equal values yield distinct indices.
#pragma once

#include "kgate_device.cuh"

namespace kgate_device {

// An unsigned image of a float that orders as the float does; NaN above everything (or below,
// for the mutant), -0.0 with +0.0.
template <int kVariant>
__device__ __forceinline__ unsigned int ordered(float v) {
  if (v != v) return kVariant == 3 ? 0u : 0xFFFFFFFFu;
  if (v == 0.f) v = 0.f;
  const unsigned int b = __float_as_uint(v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// key = ordered value in the high word, (2^32 - 2 - index) in the low word: larger is better, of
// equal values the lower index wins, and no key is 2^64 - 1 (the reduction adds one).
__device__ __forceinline__ unsigned long long make_key(unsigned int hi, i64 j) {
  return (static_cast<unsigned long long>(hi) << 32) |
         (0xFFFFFFFEull - static_cast<unsigned long long>(j));
}
__device__ __forceinline__ i64 key_index(unsigned long long key) {
  return static_cast<i64>(0xFFFFFFFEull - (key & 0xFFFFFFFFull));
}

__device__ __forceinline__ unsigned long long warp_max_u64(unsigned long long v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const unsigned long long other = __shfl_xor_sync(0xffffffffu, v, o);
    v = other > v ? other : v;
  }
  return v;
}

// Block-wide max through `scratch` (32 words of shared memory); every thread gets the result.
__device__ __forceinline__ unsigned long long block_max_u64(unsigned long long v,
                                                            unsigned long long* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = warp_max_u64(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return warp_max_u64(lane < warps ? scratch[lane] : 0ull);
}

// kVariant 0: correct. Mutants: 1 repeats a tied value's first index, 2 skips values equal to
// the previous one, 3 ranks NaN lowest.
template <typename T, int kVariant>
__global__ void topk_rows_kernel(const T* __restrict__ x, T* __restrict__ values,
                                 long long* __restrict__ indices, i64 n, i64 k, i64 x_row,
                                 i64 x_col, i64 v_row, i64 v_col, i64 i_row, i64 i_col) {
  __shared__ unsigned long long scratch[32];
  const i64 row = blockIdx.x;
  const T* xr = x + row * x_row;
  unsigned long long bound = ~0ull;
  for (i64 p = 0; p < k; ++p) {
    unsigned long long best = 0;
    bool found = false;
    for (i64 j = threadIdx.x; j < n; j += blockDim.x) {
      const unsigned int hi = ordered<kVariant>(to_float(xr[j * x_col]));
      const unsigned long long key = make_key(hi, j);
      const bool below =
          kVariant == 2 ? (p == 0 || hi < static_cast<unsigned int>(bound >> 32)) : key < bound;
      if (below && (!found || key > best)) {
        best = key;
        found = true;
      }
    }
    best = block_max_u64(found ? best + 1 : 0ull, scratch) - 1;  // +1: an empty thread never wins
    if (kVariant == 1) {
      // The first position holding the chosen value: the largest key with the same high word.
      unsigned long long first = 0;
      for (i64 j = threadIdx.x; j < n; j += blockDim.x) {
        const unsigned int hi = ordered<kVariant>(to_float(xr[j * x_col]));
        const unsigned long long key = make_key(hi, j);
        if (hi == static_cast<unsigned int>(best >> 32) && key > first) first = key;
      }
      const unsigned long long chosen = best;
      best = block_max_u64(first, scratch);
      if (threadIdx.x == 0) {
        const i64 j = key_index(chosen);
        values[row * v_row + p * v_col] = xr[j * x_col];
        indices[row * i_row + p * i_col] = key_index(best);
      }
      bound = chosen;
      continue;
    }
    if (threadIdx.x == 0) {
      const i64 j = best == ~0ull ? 0 : key_index(best);  // ~0: no element qualified (ties skipped)
      values[row * v_row + p * v_col] = xr[j * x_col];
      indices[row * i_row + p * i_col] = j;
    }
    bound = best;
  }
}

}  // namespace kgate_device
