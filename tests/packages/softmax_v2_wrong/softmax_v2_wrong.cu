// Demo version 2, deliberately WRONG: the three-pass kernel of version 1, but the sum pass stops at
// the last whole multiple of 32 elements (n & ~31), so rows whose length is not a multiple of 32
// are normalized by a sum that misses the tail (and rows shorter than 32 by a sum of 0).
#include "demo_reduce.cuh"

template <class T>
__global__ void __launch_bounds__(256)
    softmax_v2_wrong(const T* __restrict__ x, T* __restrict__ y, long long n) {
  using namespace demo;
  __shared__ float scratch[32];
  const T* xr = x + static_cast<long long>(blockIdx.x) * n;
  T* yr = y + static_cast<long long>(blockIdx.x) * n;
  float m = negative_infinity();
  for (long long i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, to_float(xr[i]));
  m = block_reduce<true>(m, scratch);
  float s = 0.f;
  const long long whole = n & ~31LL;  // BUG: the tail of the row is left out of the sum
  for (long long i = threadIdx.x; i < whole; i += blockDim.x) s += expf(to_float(xr[i]) - m);
  s = block_reduce<false>(s, scratch);
  const float inv = 1.f / s;
  for (long long i = threadIdx.x; i < n; i += blockDim.x)
    yr[i] = from_float<T>(expf(to_float(xr[i]) - m) * inv);
}
