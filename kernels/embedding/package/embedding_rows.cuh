// The device code of embedding_gather: y[t, :] = weight[indices[t], :] for weight:[V,D], int64
// indices:[T] and y:[T,D], any strides. Compiled by nvcc into the in-tree kernel
// (embedding_gather, kgate_add_kernel PACKAGE) and by NVRTC as package embedding_gather_pkg, so
// checking the package checks this code. NVRTC-compatible: no host headers. One warp per token
// (grid-stride over tokens), its lanes copying the row's elements as raw bits of their size (NaN
// payloads included); an index outside [0, V) leaves its output row unwritten.
#pragma once

#include "kgate_device.cuh"

namespace kgate_device {

/// Bits: an unsigned integer of the element's size. Strides in elements: w0, w1 of weight, idx of
/// indices, y0, y1 of y.
template <typename Bits>
__global__ void embedding_rows(const Bits* __restrict__ w, const i64* __restrict__ idx,
                               Bits* __restrict__ y, i64 t_count, i64 v_count, i64 d_count, i64 w0,
                               i64 w1, i64 idx_stride, i64 y0, i64 y1) {
  const int lane = threadIdx.x & 31;
  const i64 warps = static_cast<i64>(gridDim.x) * (blockDim.x >> 5);
  for (i64 t = static_cast<i64>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5); t < t_count;
       t += warps) {
    const i64 row = idx[t * idx_stride];
    if (row < 0 || row >= v_count) continue;
    const Bits* src = w + row * w0;
    Bits* dst = y + t * y0;
    for (i64 c = lane; c < d_count; c += 32) dst[c * y1] = src[c * w1];
  }
}

}  // namespace kgate_device
