#include "runtime/cuda/compare.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace kgate::cuda {
namespace {

__device__ __forceinline__ double widen(float v) { return v; }
__device__ __forceinline__ double widen(double v) { return v; }
__device__ __forceinline__ double widen(__half v) { return __half2float(v); }
__device__ __forceinline__ double widen(__nv_bfloat16 v) { return __bfloat162float(v); }

// Raises the flag when any thread of the block saw a difference. Every writer writes 1: no atomic.
__device__ __forceinline__ void raise_flag_if_any(bool bad, int* flag) {
  if (__syncthreads_or(bad) && threadIdx.x == 0) *reinterpret_cast<volatile int*>(flag) = 1;
}

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
  raise_flag_if_any(bad, flag);
}

// `words` 16-byte words from both (when both are 16-byte aligned), then the bytes from `tail_from`
// on, one at a time.
__global__ void bytes_differ_kernel(const unsigned char* __restrict__ a, const unsigned char* __restrict__ b,
                                    int64_t words, int64_t tail_from, int64_t bytes, int* flag) {
  bool bad = false;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const auto* wa = reinterpret_cast<const uint4*>(a);
  const auto* wb = reinterpret_cast<const uint4*>(b);
  for (int64_t i = first; i < words; i += stride) {
    const uint4 x = wa[i], y = wb[i];
    bad |= ((x.x ^ y.x) | (x.y ^ y.y) | (x.z ^ y.z) | (x.w ^ y.w)) != 0;
  }
  for (int64_t i = tail_from + first; i < bytes; i += stride) bad |= a[i] != b[i];
  raise_flag_if_any(bad, flag);
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
  const bool aligned = reinterpret_cast<uintptr_t>(a) % 16 == 0 && reinterpret_cast<uintptr_t>(b) % 16 == 0;
  const int64_t words = aligned ? bytes / 16 : 0;
  bytes_differ_kernel<<<blocks_for(words > 0 ? words : bytes), 256, 0, stream>>>(
      static_cast<const unsigned char*>(a), static_cast<const unsigned char*>(b), words, words * 16, bytes, flag);
  return cudaGetLastError();
}

}  // namespace kgate::cuda
