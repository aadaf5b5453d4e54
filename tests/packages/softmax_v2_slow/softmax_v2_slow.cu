// Demo version 2, deliberately SLOWER than version 1 (and correct): the same three-pass kernel, but
// the sum pass runs three times over global memory (redundant work the compiler cannot remove: each
// pass ends in a block reduction through shared memory), so every row is read five times.
#include "demo_reduce.cuh"

template <class T>
__global__ void __launch_bounds__(256)
    softmax_v2_slow(const T* __restrict__ x, T* __restrict__ y, long long n) {
  using namespace demo;
  __shared__ float scratch[32];
  const T* xr = x + static_cast<long long>(blockIdx.x) * n;
  T* yr = y + static_cast<long long>(blockIdx.x) * n;
  float m = negative_infinity();
  for (long long i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, to_float(xr[i]));
  m = block_reduce<true>(m, scratch);
  float s = 0.f;
#pragma unroll 1
  for (int pass = 0; pass < 3; ++pass) {
    float partial = 0.f;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) partial += expf(to_float(xr[i]) - m);
    s = block_reduce<false>(partial, scratch);
  }
  const float inv = 1.f / s;
  for (long long i = threadIdx.x; i < n; i += blockDim.x)
    yr[i] = from_float<T>(expf(to_float(xr[i]) - m) * inv);
}
