// Row softmax for kgate's softmax op (x:[B, N] -> y:[B, N], dim = -1): one block per row, any N.
// Three passes over the row: block max, block sum of exp(x - max), then the normalized output.
// Arithmetic is in float for every storage type (float, __half, __nv_bfloat16).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "block_reduce.cuh"

template <class T>
__global__ void softmax_rows(const T* __restrict__ x, T* __restrict__ y, long long n) {
  using namespace softmax_rows_detail;
  __shared__ float scratch[32];
  const long long row = blockIdx.x;
  const T* xr = x + row * n;
  T* yr = y + row * n;
  const float neg_inf = __int_as_float(0xff800000);

  float m = neg_inf;
  for (long long i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, static_cast<float>(xr[i]));
  m = block_reduce(m, MaxOp{}, neg_inf, scratch);

  float s = 0.0f;
  for (long long i = threadIdx.x; i < n; i += blockDim.x) s += expf(static_cast<float>(xr[i]) - m);
  s = block_reduce(s, SumOp{}, 0.0f, scratch);

  const float inv = 1.0f / s;
  for (long long i = threadIdx.x; i < n; i += blockDim.x)
    yr[i] = static_cast<T>(expf(static_cast<float>(xr[i]) - m) * inv);
}
