// gelu_rows_vec_unstated_pkg: the kernel of tests/packages/gelu_rows_vec, unchanged; only its guard
// differs. Exact (erf) GELU over the rows of x[B, N], each row read and written in 16-byte vectors.
// The vectors need what the manifest's guard.require states: unit element stride, rows whose starts
// are 16-byte aligned (the base aligned and the row stride a multiple of the vector), and N a
// multiple of the vector. Rows may be padded (a column slice of a wider tensor).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace gelu_rows {

__device__ inline float to_float(float v) { return v; }
__device__ inline float to_float(__half v) { return __half2float(v); }
__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__device__ inline T from_float(float v);
template <>
__device__ inline float from_float<float>(float v) {
  return v;
}
template <>
__device__ inline __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

__device__ inline float gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

template <class T>
__global__ void gelu_rows_vec(const T* __restrict__ x, T* __restrict__ y, long long rows,
                              long long n, long long x_row_stride, long long y_row_stride) {
  constexpr int kVec = 16 / sizeof(T);
  const long long per_row = n / kVec;
  const long long total = rows * per_row;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = i / per_row, v = i % per_row;
    const uint4 in = *reinterpret_cast<const uint4*>(x + r * x_row_stride + v * kVec);
    uint4 out;
    const T* a = reinterpret_cast<const T*>(&in);
    T* o = reinterpret_cast<T*>(&out);
#pragma unroll
    for (int k = 0; k < kVec; ++k) o[k] = from_float<T>(gelu(to_float(a[k])));
    *reinterpret_cast<uint4*>(y + r * y_row_stride + v * kVec) = out;
  }
}

}  // namespace gelu_rows
