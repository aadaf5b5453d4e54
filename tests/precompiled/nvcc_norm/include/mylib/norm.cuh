// A header-only CUDA template library as such libraries are written: host headers (<numeric>,
// <iostream>, <vector>) and a host class beside the templated kernels. NVRTC cannot compile it
// ("cannot open source file "numeric""); `kgate pack` compiles it with nvcc ("build" in
// kgate.json).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <iostream>
#include <numeric>
#include <vector>

namespace mylib {
namespace norm {

/// Host-side bookkeeping the library offers its users (never used on the device).
class NormPlan {
 public:
  explicit NormPlan(std::vector<int64_t> rows) : rows_(std::move(rows)) {}
  int64_t total() const { return std::accumulate(rows_.begin(), rows_.end(), int64_t{0}); }
  void print(std::ostream& os) const { os << "NormPlan(" << rows_.size() << " rows)\n"; }

 private:
  std::vector<int64_t> rows_;
};

template <typename T>
__device__ inline float to_float(T v) {
  return static_cast<float>(v);
}
template <>
__device__ inline float to_float<__half>(__half v) {
  return __half2float(v);
}
template <typename T>
__device__ inline T from_float(float v) {
  return static_cast<T>(v);
}
template <>
__device__ inline __half from_float<__half>(float v) {
  return __float2half(v);
}

/// y = x * rsqrt(mean(x^2) + eps) * weight over the rows of a contiguous x:[B, N]; one block of
/// 32 * WARPS threads per row.
template <int WARPS, typename T>
__global__ void RmsNormKernel(const T* __restrict__ x, const T* __restrict__ weight,
                              T* __restrict__ y, int64_t n, float eps) {
  __shared__ float partial[WARPS];
  const T* row = x + static_cast<int64_t>(blockIdx.x) * n;
  T* out = y + static_cast<int64_t>(blockIdx.x) * n;
  float sum = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += 32 * WARPS) {
    const float v = to_float(row[i]);
    sum += v * v;
  }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum;
  __syncthreads();
  float total = 0.f;
  for (int w = 0; w < WARPS; ++w) total += partial[w];
  const float scale = rsqrtf(total / static_cast<float>(n) + eps);
  for (int64_t i = threadIdx.x; i < n; i += 32 * WARPS)
    out[i] = from_float<T>(to_float(row[i]) * scale * to_float(weight[i]));
}

/// Fills y with `value` (a helper of the library, in two overloads: with a second output that gets
/// the same, or without).
template <typename T>
__global__ void Fill(T* y, int64_t n) {
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = from_float<T>(1.f);
}
template <typename T>
__global__ void Fill(T* y, int64_t n, T* also) {
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = also[i] = from_float<T>(1.f);
}

}  // namespace norm
}  // namespace mylib
