// Device helpers of the kernels whose device code is also an exported package: float conversion of
// the storage types, warp and block reductions, 16-byte vectors. NVRTC-compatible (cuda_fp16.h and
// cuda_bf16.h only, no host headers, no INFINITY macro), because the packages compile it at run
// time with NVRTC while the in-tree kernels compile the same text with nvcc.
//
// A package may read no file outside its own directory, so every kernels/<op>/package*/ holds a
// byte-identical copy of this file, and its device code includes that copy. This file is the one
// to edit; tests/cli/package_copies.sh fails when a copy differs and prints the command that
// refreshes the copies.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace kgate_device {

/// 64-bit sizes and strides (int64_t needs <cstdint>, which NVRTC does not provide).
using i64 = long long;

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
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

/// +Inf as a float (the INFINITY macro comes from a host header).
__device__ __forceinline__ float infinity() { return __int_as_float(0x7f800000); }

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// Block-wide max or sum through `scratch` (32 floats of shared memory); every thread gets the
/// result.
template <bool kMax>
__device__ __forceinline__ float block_reduce(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = kMax ? warp_max(v) : warp_sum(v);
  __syncthreads();  // a previous reduction may still be reading scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const float r = lane < warps ? scratch[lane] : (kMax ? -infinity() : 0.f);
  return kMax ? warp_max(r) : warp_sum(r);
}

/// kN elements of T in 16 bytes, for one vector load or store.
template <typename T>
struct alignas(16) Vec16 {
  static constexpr int kN = 16 / sizeof(T);
  T v[kN];
};

}  // namespace kgate_device
