// The GPU side of counter_rng.hpp: fills a float64 buffer in one launch.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
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

template <typename T>
__device__ T round_to(double x);
template <>
__device__ double round_to<double>(double x) {
  return x;
}
template <>
__device__ float round_to<float>(double x) {
  return __double2float_rn(x);
}
template <>
__device__ __half round_to<__half>(double x) {
  return __float2half_rn(__double2float_rn(x));  // through float, as ATen converts
}
template <>
__device__ __nv_bfloat16 round_to<__nv_bfloat16>(double x) {
  return __float2bfloat16_rn(__double2float_rn(x));
}

template <typename T>
__global__ void affine_kernel(T* out, int64_t n, Affine f, uint64_t seed, uint64_t stream) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n; i += step)
    out[i] = round_to<T>(affine_value(f, seed, stream, static_cast<uint64_t>(i)));
}

int grid_for(int64_t n, int threads) {
  const int64_t wanted = (n + threads - 1) / threads;
  return static_cast<int>(wanted < 4096 ? wanted : 4096);
}

}  // namespace

/// Fills out[0, n) with the affine family `f` in `into`'s dtype on `cuda_stream`.
cudaError_t fill_device_affine(void* out, DrawInto into, int64_t n, const Affine& f, uint64_t seed,
                               uint64_t stream, cudaStream_t cuda_stream) {
  if (n <= 0) return cudaSuccess;
  const int threads = 256, blocks = grid_for(n, threads);
  switch (into) {
    case DrawInto::f64:
      affine_kernel<<<blocks, threads, 0, cuda_stream>>>(static_cast<double*>(out), n, f, seed,
                                                         stream);
      break;
    case DrawInto::f32:
      affine_kernel<<<blocks, threads, 0, cuda_stream>>>(static_cast<float*>(out), n, f, seed,
                                                         stream);
      break;
    case DrawInto::f16:
      affine_kernel<<<blocks, threads, 0, cuda_stream>>>(static_cast<__half*>(out), n, f, seed,
                                                         stream);
      break;
    case DrawInto::bf16:
      affine_kernel<<<blocks, threads, 0, cuda_stream>>>(static_cast<__nv_bfloat16*>(out), n, f,
                                                         seed, stream);
      break;
  }
  return cudaGetLastError();
}

/// Fills out[0, n) on `cuda_stream`; returns the launch's error.
cudaError_t fill_device(double* out, int64_t n, uint64_t seed, uint64_t stream, bool gaussian,
                        cudaStream_t cuda_stream) {
  if (n <= 0) return cudaSuccess;
  const int threads = 256, blocks = grid_for(n, threads);
  fill_kernel<<<blocks, threads, 0, cuda_stream>>>(out, n, seed, stream, gaussian);
  return cudaGetLastError();
}

}  // namespace kgate::values
