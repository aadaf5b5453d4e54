// The device code of group_norm_block: group_norm of x:[B,G,CG,HW] (C = G*CG channels in G groups)
// with weight and bias:[G,CG], any sizes and strides (scalar accesses). Compiled by nvcc into the
// in-tree kernel (group_norm_block, kgate_add_kernel PACKAGE) and by NVRTC as package
// group_norm_block_pkg, so checking the package checks this code. NVRTC-compatible: no host
// headers.
// One block per (batch, group): the CG*HW elements of the group, three passes in float as
// layer_norm_block does (differences from the group's first element, two-pass variance), then
// y = ((x - p) - mean_d) * rsqrt(var + eps) * weight[g,c] + bias[g,c]. A NaN or +-Inf in a group
// makes the whole group NaN, as ATen's Welford reduction makes it.
#pragma once

#include "kgate_device.cuh"

namespace kgate_device {

/// Offset of element k (of CG*HW) of a group, given the strides of the (CG, HW) dims.
__device__ __forceinline__ i64 group_offset(i64 k, i64 hw, i64 s_c, i64 s_hw) {
  return (k / hw) * s_c + (k % hw) * s_hw;
}

/// Group blockIdx.x % groups of batch blockIdx.x / groups; group_size = CG * HW >= 1; strides in
/// elements: x_s* and y_s* of [B,G,CG,HW], w_s* and b_s* of [G,CG].
template <typename T>
__global__ void group_norm_groups(const T* __restrict__ x, const T* __restrict__ w,
                                  const T* __restrict__ b, T* __restrict__ y, float eps, i64 groups,
                                  i64 hw, i64 group_size, i64 x_s0, i64 x_s1, i64 x_s2, i64 x_s3,
                                  i64 y_s0, i64 y_s1, i64 y_s2, i64 y_s3, i64 w_s0, i64 w_s1,
                                  i64 b_s0, i64 b_s1) {
  __shared__ float scratch[32];
  const i64 batch = blockIdx.x / groups, group = blockIdx.x % groups;
  const T* xg = x + batch * x_s0 + group * x_s1;
  T* yg = y + batch * y_s0 + group * y_s1;
  const T* wg = w + group * w_s0;
  const T* bg = b + group * b_s0;
  const float p = to_float(xg[0]);
  float s1 = 0.f;
  for (i64 k = threadIdx.x; k < group_size; k += blockDim.x)
    s1 += to_float(xg[group_offset(k, hw, x_s2, x_s3)]) - p;
  const float mean_d = block_reduce<false>(s1, scratch) / static_cast<float>(group_size);
  float s2 = 0.f;
  for (i64 k = threadIdx.x; k < group_size; k += blockDim.x) {
    const float d = (to_float(xg[group_offset(k, hw, x_s2, x_s3)]) - p) - mean_d;
    s2 += d * d;
  }
  const float rstd =
      rsqrtf(block_reduce<false>(s2, scratch) / static_cast<float>(group_size) + eps);
  for (i64 k = threadIdx.x; k < group_size; k += blockDim.x) {
    const i64 c = k / hw;
    const float d = (to_float(xg[group_offset(k, hw, x_s2, x_s3)]) - p) - mean_d;
    const float out = d * rstd * to_float(wg[c * w_s1]) + to_float(bg[c * b_s1]);
    yg[group_offset(k, hw, y_s2, y_s3)] = from_float<T>(out);
  }
}

}  // namespace kgate_device
