// A softmax built by nvcc ahead of time (a CUBIN for sm_90 and PTX for compute_90), as a user's
// own build, CUTLASS or Triton's ahead-of-time compiler would ship it: kgate loads the file
// through the driver API, never compiles it. One block of 256 threads per row, float accumulation.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

constexpr int kBlock = 256;

__device__ float block_reduce(float v, float* red, bool take_max) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s)
      red[threadIdx.x] = take_max ? fmaxf(red[threadIdx.x], red[threadIdx.x + s])
                                  : red[threadIdx.x] + red[threadIdx.x + s];
    __syncthreads();
  }
  const float out = red[0];
  __syncthreads();
  return out;
}

template <typename T>
__device__ void softmax_row(const T* x, T* y, long long rows, int n, long long x_row,
                            long long y_row) {
  __shared__ float red[kBlock];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const T* xr = x + row * x_row;
  T* yr = y + row * y_row;
  float m = -__int_as_float(0x7f800000);
  bool nan = false;
  for (int i = threadIdx.x; i < n; i += kBlock) {
    const float v = float(xr[i]);
    nan = nan || v != v;
    m = fmaxf(m, v);
  }
  m = block_reduce(m, red, true);
  if (__syncthreads_or(nan)) m = __int_as_float(0x7fc00000);
  float sum = 0.0f;
  for (int i = threadIdx.x; i < n; i += kBlock) sum += expf(float(xr[i]) - m);
  sum = block_reduce(sum, red, false);
  for (int i = threadIdx.x; i < n; i += kBlock) yr[i] = T(expf(float(xr[i]) - m) / sum);
}

}  // namespace

extern "C" __global__ void softmax_pre_f32(const float* x, float* y, long long rows, int n,
                                           long long xs, long long ys) {
  softmax_row(x, y, rows, n, xs, ys);
}
extern "C" __global__ void softmax_pre_f16(const __half* x, __half* y, long long rows, int n,
                                           long long xs, long long ys) {
  softmax_row(x, y, rows, n, xs, ys);
}
extern "C" __global__ void softmax_pre_bf16(const __nv_bfloat16* x, __nv_bfloat16* y,
                                            long long rows, int n, long long xs, long long ys) {
  softmax_row(x, y, rows, n, xs, ys);
}
