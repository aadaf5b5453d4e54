// Device code of the l2_normalize kernels: one block per row, fp32 accumulation.
// L2N_DROP_TAIL (-DL2N_DROP_TAIL=true) is the bug of the wrong kernel: it works in groups of 4 and
// forgets the last N % 4. NVRTC-compatible (the package compiles it at run time too).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#ifndef L2N_DROP_TAIL
#define L2N_DROP_TAIL false
#endif

namespace l2n {

template <typename T>
__global__ void normalize_rows(const T* x, T* y, int64_t n, int64_t x_row_stride,
                               int64_t y_row_stride, float eps) {
  const T* xr = x + blockIdx.x * x_row_stride;
  T* yr = y + blockIdx.x * y_row_stride;
  const int64_t end = L2N_DROP_TAIL ? n - n % 4 : n;
  float sum = 0.f;
  for (int64_t i = threadIdx.x; i < end; i += blockDim.x) {
    const float v = static_cast<float>(xr[i]);
    sum += v * v;
  }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  __shared__ float warp_sums[32];
  __shared__ float total;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    float s = lane < static_cast<int>(blockDim.x / 32) ? warp_sums[lane] : 0.f;
    for (int offset = 16; offset > 0; offset /= 2) s += __shfl_xor_sync(0xffffffffu, s, offset);
    if (lane == 0) total = s;
  }
  __syncthreads();
  // Not fmaxf(sqrtf(total), eps): fmaxf returns eps for a NaN norm, and a row holding a NaN would
  // come out finite where the reference (clamp_min) propagates the NaN. kgate's special cases
  // caught exactly that in the first version of this kernel.
  const float root = sqrtf(total);
  const float norm = root < eps ? eps : root;
  for (int64_t i = threadIdx.x; i < end; i += blockDim.x)
    yr[i] = static_cast<T>(static_cast<float>(xr[i]) / norm);
}

}  // namespace l2n
