// Tile-edge mutants of rms_norm (y = x * rsqrt(mean(x^2) + eps) * weight over rows of x:[B,N]):
// correct everywhere but at one kind of tile edge, where the row's last element takes the weight
// of the element before it (the reported bug: a one-element tail reused the previous weight).
// Compiled by nvcc into the kernels of tests/edges/ and the custom ops of tests/torch_op/, and by
// NVRTC as the package of tests/edges/package/. NVRTC-compatible: no host headers.
#pragma once

#include "kgate_device.cuh"

namespace kgate_edges {

using kgate_device::i64;

/// Where a mutant is wrong: the row length's tail after whole tiles of `tile` elements.
enum Bug : int {
  kCorrect = 0,
  kTailOne = 1,    ///< one element past whole tiles: N = t + 1, 2t + 1, ...
  kTailShort = 2,  ///< a tail of t - 1: N = t - 1, 2t - 1, ...
  kWholeTile = 3,  ///< the last tile whole: N = t, 2t, ...
  kVector8 = 4,    ///< any N that is not a multiple of 8 (a vector width's tail)
};

__device__ __forceinline__ bool wrong_at(int bug, i64 n, i64 tile) {
  if (n < 2) return false;
  switch (bug) {
    case kTailOne:
      return n > tile && n % tile == 1;
    case kTailShort:
      return n % tile == tile - 1;
    case kWholeTile:
      return n % tile == 0;
    case kVector8:
      return n % 8 != 0;
    default:
      return false;
  }
}

/// One block per row, each thread VPT consecutive elements a step: the tile is blockDim.x x VPT.
template <typename T, int VPT>
__global__ void rms_norm_block_tiles(const T* __restrict__ x, const T* __restrict__ w,
                                     T* __restrict__ y, i64 n, float eps, i64 x_row, i64 y_row,
                                     int bug) {
  __shared__ float scratch[32];
  const T* xr = x + static_cast<i64>(blockIdx.x) * x_row;
  T* yr = y + static_cast<i64>(blockIdx.x) * y_row;
  const i64 tile = static_cast<i64>(blockDim.x) * VPT;
  float sq = 0.f;
  for (i64 j0 = static_cast<i64>(threadIdx.x) * VPT; j0 < n; j0 += tile)
    for (int v = 0; v < VPT; ++v)
      if (j0 + v < n) {
        const float f = kgate_device::to_float(xr[j0 + v]);
        sq += f * f;
      }
  const float inv_rms =
      rsqrtf(kgate_device::block_reduce<false>(sq, scratch) / static_cast<float>(n) + eps);
  const bool wrong = wrong_at(bug, n, tile);
  for (i64 j0 = static_cast<i64>(threadIdx.x) * VPT; j0 < n; j0 += tile)
    for (int v = 0; v < VPT; ++v) {
      const i64 j = j0 + v;
      if (j >= n) break;
      const i64 wj = wrong && j == n - 1 ? j - 1 : j;  // BUG at the edge: the previous weight
      yr[j] = kgate_device::from_float<T>(kgate_device::to_float(xr[j]) * inv_rms *
                                          kgate_device::to_float(w[wj]));
    }
}

/// One warp per row (blockDim.x / 32 rows a block), each lane VPT consecutive elements a step: the
/// tile is 32 x VPT, whatever the block.
template <typename T, int VPT>
__global__ void rms_norm_warp_tiles(const T* __restrict__ x, const T* __restrict__ w,
                                    T* __restrict__ y, i64 rows, i64 n, float eps, i64 x_row,
                                    i64 y_row, int bug) {
  const i64 row = static_cast<i64>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const T* xr = x + row * x_row;
  T* yr = y + row * y_row;
  const i64 tile = 32 * VPT;
  float sq = 0.f;
  for (i64 j0 = static_cast<i64>(lane) * VPT; j0 < n; j0 += tile)
    for (int v = 0; v < VPT; ++v)
      if (j0 + v < n) {
        const float f = kgate_device::to_float(xr[j0 + v]);
        sq += f * f;
      }
  for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
  const float inv_rms = rsqrtf(sq / static_cast<float>(n) + eps);
  const bool wrong = wrong_at(bug, n, tile);
  for (i64 j0 = static_cast<i64>(lane) * VPT; j0 < n; j0 += tile)
    for (int v = 0; v < VPT; ++v) {
      const i64 j = j0 + v;
      if (j >= n) break;
      const i64 wj = wrong && j == n - 1 ? j - 1 : j;
      yr[j] = kgate_device::from_float<T>(kgate_device::to_float(xr[j]) * inv_rms *
                                          kgate_device::to_float(w[wj]));
    }
}

}  // namespace kgate_edges
