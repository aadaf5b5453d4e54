// Block-wide reductions of the demo softmax packages: warp shuffles, then one partial per warp
// through shared memory. Every thread of the block receives the result; blockDim.x must be a
// multiple of 32 and `scratch` hold 32 floats.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace demo {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

__device__ __forceinline__ float negative_infinity() { return -__int_as_float(0x7f800000); }

template <bool kMax>
__device__ __forceinline__ float warp_reduce(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  return v;
}

template <bool kMax>
__device__ __forceinline__ float block_reduce(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_reduce<kMax>(v);
  __syncthreads();  // a previous reduction may still be reading scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const float r = lane < warps ? scratch[lane] : (kMax ? negative_infinity() : 0.f);
  return warp_reduce<kMax>(r);
}

}  // namespace demo
