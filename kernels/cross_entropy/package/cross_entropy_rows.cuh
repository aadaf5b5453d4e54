// The device code of cross_entropy_rows (compiled into the build from this package; its mutants in
// kernels/cross_entropy/cross_entropy_rows.cu) and of package cross_entropy_rows_pkg.
// NVRTC-compatible: no host headers. Two deterministic passes: one 256-thread block per row reads
// the row once (online logsumexp) and writes the row's loss and whether it counts (its target is
// not ignore_index) into `rows` (2 floats per row); one block then sums the rows in a fixed order
// and writes the mean (0/0 = NaN when every row is ignored, as the reference). NaN and Inf follow
// the reference; logits of any strides.
#pragma once

#include "kgate_device.cuh"

namespace kgate_device {

__device__ __forceinline__ float max_nan(float a, float b) { return (a != a || a > b) ? a : b; }

/// s * exp(from - to), 0 when s is 0 (an empty or all -Inf part: exp(-Inf - -Inf) would be NaN).
__device__ __forceinline__ float rescaled(float s, float from, float to) {
  return s == 0.f ? 0.f : s * expf(from - to);
}

/// The row's (max, sum of exp(x - max)) through `scratch` (64 floats), NaN-propagating.
__device__ __forceinline__ void block_logsumexp(float& m, float& s, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
    const float mm = max_nan(m, m2);
    s = rescaled(s, m, mm) + rescaled(s2, m2, mm);
    m = mm;
  }
  __syncthreads();
  if (lane == 0) {
    scratch[warp] = m;
    scratch[32 + warp] = s;
  }
  __syncthreads();
  m = lane < warps ? scratch[lane] : -infinity();
  s = lane < warps ? scratch[32 + lane] : 0.f;
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
    const float mm = max_nan(m, m2);
    s = rescaled(s, m, mm) + rescaled(s2, m2, mm);
    m = mm;
  }
}

// kVariant 0: correct. 1 (mutant): ignored rows counted in the mean. 2 (mutant): no
// max-subtraction. One pass over the row (online logsumexp: the running sum is rescaled when the
// max grows).
template <typename T, int kVariant>
__global__ void cross_entropy_row_losses(const T* logits, const i64* target, float* rows, i64 c,
                                         i64 s0, i64 s1, i64 t0, i64 ignore_index) {
  __shared__ float scratch[64];
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
  float m = kVariant == 2 ? 0.f : -infinity(), s = 0.f;
  for (i64 j = threadIdx.x; j < c; j += blockDim.x) {
    const float v = to_float(x[j * s1]);
    if (kVariant == 2) {
      s += expf(v);
    } else if (v != v) {
      m = v;
      s = v;
    } else if (v > m) {
      s = rescaled(s, m, v) + 1.f;
      m = v;
    } else if (s == s && v != -infinity()) {  // -Inf adds exp(-Inf) = 0
      s += rescaled(1.f, v, m);
    }
  }
  if (kVariant == 2) {
    s = block_reduce<false>(s, scratch);
  } else {
    block_logsumexp(m, s, scratch);
    // A +Inf max makes x - max NaN at the max itself: the reference's sum is NaN.
    if (m == infinity()) s = __int_as_float(0x7fffffff);
  }
  if (threadIdx.x == 0) {
    rows[2 * r] = -((to_float(x[t * s1]) - m) - logf(s));
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
