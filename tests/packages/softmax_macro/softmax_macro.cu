// A softmax kernel typed and sized by macros, as much third-party code is: SCALAR (the element
// type) comes from the package's nvrtc_options_for_dtype, BLOCK (threads per row) from each
// launch's nvrtc_options. kgate compiles one translation unit per distinct option set. One block
// per row, float accumulation, the row read three times (max, sum, write). NVRTC has no <math.h>,
// so INFINITY is spelled out.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#ifndef SCALAR
#error \
    "compile with -DSCALAR=float, -DSCALAR=__half or -DSCALAR=__nv_bfloat16 (kgate.json: nvrtc_options_for_dtype)"
#endif
#ifndef BLOCK
#error "compile with -DBLOCK=N, a power of two (kgate.json: the launch's nvrtc_options)"
#endif

__device__ float block_reduce(float v, float* red, bool take_max) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s)
      red[threadIdx.x] = take_max ? fmaxf(red[threadIdx.x], red[threadIdx.x + s])
                                  : red[threadIdx.x] + red[threadIdx.x + s];
    __syncthreads();
  }
  const float out = red[0];
  __syncthreads();
  return out;
}

extern "C" __global__ void softmax_macro(const SCALAR* x, SCALAR* y, long long rows, int n,
                                         long long x_row, long long y_row) {
  __shared__ float red[BLOCK];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const SCALAR* xr = x + row * x_row;
  SCALAR* yr = y + row * y_row;
  float m = -__int_as_float(0x7f800000);
  bool nan = false;
  for (int i = threadIdx.x; i < n; i += BLOCK) {
    const float v = float(xr[i]);
    nan = nan || v != v;
    m = fmaxf(m, v);
  }
  m = block_reduce(m, red, true);
  if (__syncthreads_or(nan))
    m = __int_as_float(0x7fc00000);  // a NaN in the row makes every output NaN
  float sum = 0.0f;
  for (int i = threadIdx.x; i < n; i += BLOCK) sum += expf(float(xr[i]) - m);
  sum = block_reduce(sum, red, false);
  for (int i = threadIdx.x; i < n; i += BLOCK) yr[i] = SCALAR(expf(float(xr[i]) - m) / sum);
}
