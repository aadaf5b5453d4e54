// The device code of softmax_varlen_block: softmax over each member of a packed batch, x:[T] with
// int32 offsets cu_seqlens:[S+1] (contiguous), y:[T], any member lengths (0 included) and any
// strides of x and y. Compiled by nvcc into the in-tree kernel
// (softmax_varlen_block, kgate_add_kernel PACKAGE) and by NVRTC as package
// softmax_varlen_block_pkg, so checking the package checks this code. NVRTC-compatible: no host
// headers.
// One block per member, three passes over it in float (max, sum of exp(x - max), write
// exp(x - max) / sum), so NaN/Inf follow softmax: a NaN or +Inf in a member, or a member of only
// -Inf, makes the member NaN.
#pragma once

#include "kgate_device.cuh"

namespace kgate_device {

/// Member blockIdx.x: x[cu[blockIdx.x] : cu[blockIdx.x + 1]]; strides in elements.
template <typename T>
__global__ void softmax_varlen_members(const T* __restrict__ x, const int* __restrict__ cu,
                                       T* __restrict__ y, i64 xs, i64 ys) {
  __shared__ float scratch[32];
  const i64 begin = cu[blockIdx.x], end = cu[blockIdx.x + 1];
  if (end <= begin) return;  // an empty member (uniform over the block)
  float m = -infinity();
  for (i64 i = begin + threadIdx.x; i < end; i += blockDim.x) m = fmaxf(m, to_float(x[i * xs]));
  m = block_reduce<true>(m, scratch);
  float s = 0.f;
  for (i64 i = begin + threadIdx.x; i < end; i += blockDim.x) s += expf(to_float(x[i * xs]) - m);
  s = block_reduce<false>(s, scratch);
  for (i64 i = begin + threadIdx.x; i < end; i += blockDim.x)
    y[i * ys] = from_float<T>(expf(to_float(x[i * xs]) - m) / s);
}

}  // namespace kgate_device
