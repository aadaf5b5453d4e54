// The device code of cross_entropy_rows (kernels/cross_entropy/cross_entropy_rows.cu) and of package
// cross_entropy_rows_pkg. NVRTC-compatible: no host headers.
// Two deterministic passes: one 256-thread block per row writes the row's loss and whether it
// counts (its target is not ignore_index) into `rows` (2 floats per row); one block then sums the
// rows in a fixed order and writes the mean (0/0 = NaN when every row is ignored, as the reference).
// The row max propagates NaN (fmaxf would drop it); logits of any strides.
#pragma once

#include "kgate_device.cuh"

namespace kgate_device {

__device__ __forceinline__ float max_nan(float a, float b) { return (a != a || a > b) ? a : b; }

__device__ __forceinline__ float block_max_nan(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  for (int o = 16; o > 0; o >>= 1) v = max_nan(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float r = lane < warps ? scratch[lane] : -infinity();
  for (int o = 16; o > 0; o >>= 1) r = max_nan(r, __shfl_xor_sync(0xffffffffu, r, o));
  return r;
}

// kVariant 0: correct. 1 (mutant): ignored rows counted in the mean. 2 (mutant): no max-subtraction.
template <typename T, int kVariant>
__global__ void cross_entropy_row_losses(const T* logits, const i64* target, float* rows, i64 c, i64 s0, i64 s1,
                                         i64 t0, i64 ignore_index) {
  __shared__ float scratch[32];
  const i64 r = blockIdx.x;
  const i64 t = target[r * t0];
  if (t == ignore_index) {
    if (threadIdx.x == 0) {
      rows[2 * r] = 0.f;
      rows[2 * r + 1] = kVariant == 1 ? 1.f : 0.f;
    }
    return;
  }
  const T* x = logits + r * s0;
  float m = -infinity();
  if (kVariant != 2)
    for (i64 j = threadIdx.x; j < c; j += blockDim.x) m = max_nan(m, to_float(x[j * s1]));
  m = kVariant == 2 ? 0.f : block_max_nan(m, scratch);
  float sum = 0.f;
  for (i64 j = threadIdx.x; j < c; j += blockDim.x) sum += expf(to_float(x[j * s1]) - m);
  sum = block_reduce<false>(sum, scratch);
  if (threadIdx.x == 0) {
    rows[2 * r] = -((to_float(x[t * s1]) - m) - logf(sum));
    rows[2 * r + 1] = 1.f;
  }
}

template <typename T>
__global__ void cross_entropy_mean(const float* rows, i64 n, T* loss) {
  __shared__ float scratch[32];
  float total = 0.f, count = 0.f;
  for (i64 r = threadIdx.x; r < n; r += blockDim.x) {
    total += rows[2 * r];
    count += rows[2 * r + 1];
  }
  total = block_reduce<false>(total, scratch);
  count = block_reduce<false>(count, scratch);
  if (threadIdx.x == 0) loss[0] = from_float<T>(total / count);
}

}  // namespace kgate_device
