// Demo baseline (version 1): a plain, correct row softmax. One 256-thread block per row and three
// passes over the row in global memory: the row max, the sum of exp(x - max), then the output.
#include "demo_reduce.cuh"

template <class T>
__global__ void __launch_bounds__(256)
    softmax_v1(const T* __restrict__ x, T* __restrict__ y, long long n) {
  using namespace demo;
  __shared__ float scratch[32];
  const T* xr = x + static_cast<long long>(blockIdx.x) * n;
  T* yr = y + static_cast<long long>(blockIdx.x) * n;
  float m = negative_infinity();
  for (long long i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, to_float(xr[i]));
  m = block_reduce<true>(m, scratch);
  float s = 0.f;
  for (long long i = threadIdx.x; i < n; i += blockDim.x) s += expf(to_float(xr[i]) - m);
  s = block_reduce<false>(s, scratch);
  const float inv = 1.f / s;
  for (long long i = threadIdx.x; i < n; i += blockDim.x)
    yr[i] = from_float<T>(expf(to_float(xr[i]) - m) * inv);
}
