#include "runtime/cuda/compare.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace kgate::cuda {
namespace {

__device__ __forceinline__ double widen(float v) { return v; }
__device__ __forceinline__ double widen(double v) { return v; }
__device__ __forceinline__ double widen(__half v) { return __half2float(v); }
__device__ __forceinline__ double widen(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__global__ void not_close_kernel(const T* __restrict__ out, const T* __restrict__ want, int64_t count, double rtol,
                                 double atol, int* flag) {
  bool bad = false;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count; i += stride) {
    const double o = widen(out[i]), w = widen(want[i]);
    if (o == w || (o != o && w != w)) continue;  // equal (infinities included), or both NaN
    if (o != o || w != w || isinf(o) || isinf(w) || !(fabs(o - w) <= atol + rtol * fabs(w))) bad = true;
  }
  if (__syncthreads_or(bad) && threadIdx.x == 0) *reinterpret_cast<volatile int*>(flag) = 1;  // every writer writes 1: no atomic needed
}

__global__ void bytes_differ_kernel(const unsigned char* __restrict__ a, const unsigned char* __restrict__ b,
                                    int64_t bytes, int* flag) {
  bool bad = false;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < bytes; i += stride)
    bad |= a[i] != b[i];
  if (__syncthreads_or(bad) && threadIdx.x == 0) *reinterpret_cast<volatile int*>(flag) = 1;  // every writer writes 1: no atomic needed
}

int blocks_for(int64_t count) {
  const int64_t b = (count + 255) / 256;
  return static_cast<int>(b < 1 ? 1 : (b > 1024 ? 1024 : b));
}

}  // namespace

cudaError_t launch_flag_not_close(const void* out, const void* want, int64_t count, CloseType type, double rtol,
                                  double atol, int* flag, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  const int blocks = blocks_for(count);
  switch (type) {
    case CloseType::f32:
      not_close_kernel<<<blocks, 256, 0, stream>>>(static_cast<const float*>(out), static_cast<const float*>(want), count,
                                                   rtol, atol, flag);
      break;
    case CloseType::f16:
      not_close_kernel<<<blocks, 256, 0, stream>>>(static_cast<const __half*>(out), static_cast<const __half*>(want),
                                                   count, rtol, atol, flag);
      break;
    case CloseType::bf16:
      not_close_kernel<<<blocks, 256, 0, stream>>>(static_cast<const __nv_bfloat16*>(out),
                                                   static_cast<const __nv_bfloat16*>(want), count, rtol, atol, flag);
      break;
    case CloseType::f64:
      not_close_kernel<<<blocks, 256, 0, stream>>>(static_cast<const double*>(out), static_cast<const double*>(want),
                                                   count, rtol, atol, flag);
      break;
  }
  return cudaGetLastError();
}

cudaError_t launch_flag_bytes_differ(const void* a, const void* b, int64_t bytes, int* flag, cudaStream_t stream) {
  if (bytes <= 0) return cudaSuccess;
  bytes_differ_kernel<<<blocks_for(bytes), 256, 0, stream>>>(static_cast<const unsigned char*>(a),
                                                             static_cast<const unsigned char*>(b), bytes, flag);
  return cudaGetLastError();
}

}  // namespace kgate::cuda
