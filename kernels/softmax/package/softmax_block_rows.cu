// softmax_block's block-per-row register path (kernels/softmax/softmax_block.cu), self-contained for
// NVRTC: y = softmax(x, dim=-1) over x:[B, N]. One block per row; thread t holds the elements
// t, t + blockDim.x, ... (at most kElems of them) in registers: one read and one write per element.
// Handles N <= kElems * blockDim.x (the manifest's guard keeps N <= 16 * 1024). Accumulation in
// float; NaN and +-Inf propagate as in the eager reference.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace softmax_block_pkg {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

__device__ __forceinline__ float negative_infinity() { return -__int_as_float(0x7f800000); }

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

// Block-wide max or sum; every thread receives the result. `scratch` holds 32 floats.
template <bool kMax>
__device__ __forceinline__ float block_reduce(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = kMax ? warp_max(v) : warp_sum(v);
  __syncthreads();  // a previous reduction may still be reading scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float r = lane < warps ? scratch[lane] : (kMax ? negative_infinity() : 0.f);
  return kMax ? warp_max(r) : warp_sum(r);
}

}  // namespace softmax_block_pkg

template <class T, int kElems>
__global__ void __launch_bounds__(1024)
    softmax_block_rows(const T* __restrict__ x, T* __restrict__ y, int n, long long x_row_stride,
                       long long y_row_stride) {
  using namespace softmax_block_pkg;
  __shared__ float scratch[32];
  const T* xr = x + static_cast<long long>(blockIdx.x) * x_row_stride;
  T* yr = y + static_cast<long long>(blockIdx.x) * y_row_stride;
  float v[kElems];
  float m = negative_infinity();
#pragma unroll
  for (int i = 0; i < kElems; ++i) {
    const int c = i * blockDim.x + threadIdx.x;
    v[i] = c < n ? to_float(xr[c]) : negative_infinity();
    m = fmaxf(m, v[i]);
  }
  m = block_reduce<true>(m, scratch);
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < kElems; ++i) {
    const int c = i * blockDim.x + threadIdx.x;
    v[i] = c < n ? expf(v[i] - m) : 0.f;
    s += v[i];
  }
  s = block_reduce<false>(s, scratch);
  const float inv = 1.f / s;
#pragma unroll
  for (int i = 0; i < kElems; ++i) {
    const int c = i * blockDim.x + threadIdx.x;
    if (c < n) yr[c] = from_float<T>(v[i] * inv);
  }
}
