// A row softmax written as kernel headers of public repositories are: the C and C++ headers nvcc
// takes (NVRTC opens none of them by itself), `uint`, assert and printf. kgate compiles it
// unchanged (runtime/package/nvrtc_standins.hpp).
#pragma once
#include <cuda_runtime.h>
#include <algorithm>
#include <cassert>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

template <typename T, int kThreads>
__global__ void softmax_as_written(const T* x, T* y, int64_t n) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps");
  assert(blockDim.x == kThreads);
  __shared__ float partial[32];
  const int64_t row = blockIdx.x;
  const T* in = x + row * n;
  T* out = y + row * n;
  const uint lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float m = -FLT_MAX;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) m = std::max(m, static_cast<float>(in[i]));
  for (int o = 16; o > 0; o /= 2) m = std::max(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) partial[warp] = m;
  __syncthreads();
  m = -FLT_MAX;
  for (uint w = 0; w < kThreads / 32; ++w) m = std::max(m, partial[w]);
  __syncthreads();
  float sum = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += kThreads)
    sum += std::exp(static_cast<float>(in[i]) - m);
  for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (lane == 0) partial[warp] = sum;
  __syncthreads();
  sum = 0.f;
  for (uint w = 0; w < kThreads / 32; ++w) sum += partial[w];
  for (int64_t i = threadIdx.x; i < n; i += kThreads)
    out[i] = static_cast<T>(std::exp(static_cast<float>(in[i]) - m) / sum);
  if (row == 0 && threadIdx.x == 0 && !(sum > 0.f) && m > -FLT_MAX)
    printf("softmax_as_written: row 0 sums to %f\n", sum);
}
