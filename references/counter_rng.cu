// The GPU side of counter_rng.hpp: fills a float64 buffer in one launch.
#include <cuda_runtime.h>

#include "references/counter_rng.hpp"

namespace kgate::values {
namespace {

__global__ void fill_kernel(double* out, int64_t n, uint64_t seed, uint64_t stream, bool gaussian) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n; i += step)
    out[i] = gaussian ? normal(seed, stream, static_cast<uint64_t>(i))
                      : uniform(seed, stream, static_cast<uint64_t>(i));
}

}  // namespace

/// Fills out[0, n) on `cuda_stream`; returns the launch's error.
cudaError_t fill_device(double* out, int64_t n, uint64_t seed, uint64_t stream, bool gaussian,
                        cudaStream_t cuda_stream) {
  if (n <= 0) return cudaSuccess;
  const int threads = 256;
  const int64_t wanted = (n + threads - 1) / threads;
  const int blocks = static_cast<int>(wanted < 4096 ? wanted : 4096);
  fill_kernel<<<blocks, threads, 0, cuda_stream>>>(out, n, seed, stream, gaussian);
  return cudaGetLastError();
}

}  // namespace kgate::values
