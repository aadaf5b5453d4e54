// A row softmax that picks its launch per device, as tuned kernels do: where a row fits in the
// shared memory a block can opt in to (and the GPU has thread-block clusters), softmax_cached
// keeps the row in dynamic shared memory, past the default 48 KiB, launched in clusters of two
// blocks with the carveout at its maximum; elsewhere softmax_streamed reads the row three times.
// One block per row; a block past the last row (the grid rounded up to the cluster) returns.
#include <cfloat>

template <int THREADS>
__device__ float block_reduce(float v, bool is_max, float* scratch) {
  for (int o = 16; o > 0; o /= 2) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  v = threadIdx.x < THREADS / 32 ? scratch[threadIdx.x] : (is_max ? -FLT_MAX : 0.f);
  if (threadIdx.x < 32)
    for (int o = 16; o > 0; o /= 2) {
      const float w = __shfl_xor_sync(0xffffffffu, v, o);
      v = is_max ? fmaxf(v, w) : v + w;
    }
  if (threadIdx.x == 0) scratch[0] = v;
  __syncthreads();
  v = scratch[0];
  __syncthreads();
  return v;
}

extern "C" __global__ void softmax_cached(const float* x, float* y, long long rows, long long n) {
  extern __shared__ float row[];
  __shared__ float scratch[32];
  const long long r = blockIdx.x;
  if (r >= rows) return;
  const float* xr = x + r * n;
  float m = -FLT_MAX;
  for (long long i = threadIdx.x; i < n; i += 256) {
    row[i] = xr[i];
    m = fmaxf(m, row[i]);
  }
  m = block_reduce<256>(m, true, scratch);
  float s = 0.f;
  for (long long i = threadIdx.x; i < n; i += 256) {
    row[i] = __expf(row[i] - m);
    s += row[i];
  }
  s = block_reduce<256>(s, false, scratch);
  for (long long i = threadIdx.x; i < n; i += 256) y[r * n + i] = row[i] / s;
}

extern "C" __global__ void softmax_streamed(const float* x, float* y, long long rows, long long n) {
  __shared__ float scratch[32];
  const long long r = blockIdx.x;
  if (r >= rows) return;
  const float* xr = x + r * n;
  float m = -FLT_MAX;
  for (long long i = threadIdx.x; i < n; i += 256) m = fmaxf(m, xr[i]);
  m = block_reduce<256>(m, true, scratch);
  float s = 0.f;
  for (long long i = threadIdx.x; i < n; i += 256) s += __expf(xr[i] - m);
  s = block_reduce<256>(s, false, scratch);
  for (long long i = threadIdx.x; i < n; i += 256) y[r * n + i] = __expf(xr[i] - m) / s;
}
