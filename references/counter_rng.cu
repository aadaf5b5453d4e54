// The GPU side of counter_rng.hpp: a float64 draw (fill_device), and every value family drawn
// straight into its float dtype (fill_device_draw), each in one launch (clustered_max: two).
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
__global__ void draw_kernel(T* out, int64_t n, Draw f, uint64_t seed, const double* row_max) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n; i += step)
    out[i] = round_to<T>(draw_value(f, seed, static_cast<uint64_t>(i), row_max));
}

// One block per row (a grid-stride over rows): the max of the row's primary normal draws. A max
// is exact, so the order of the reduction cannot change it.
__global__ void row_max_kernel(double* row_max, int64_t rows, int64_t row, uint64_t seed) {
  __shared__ double part[256];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    double m = -KGATE_INFINITY;
    for (int64_t j = threadIdx.x; j < row; j += blockDim.x)
      m = fmax(m, normal(seed, kPrimary, static_cast<uint64_t>(r * row + j)));
    part[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (static_cast<int>(threadIdx.x) < s)
        part[threadIdx.x] = fmax(part[threadIdx.x], part[threadIdx.x + s]);
      __syncthreads();
    }
    if (threadIdx.x == 0) row_max[r] = part[0];
    __syncthreads();
  }
}

// Blocks for n items at `per_block` a block, at most 4096 (the kernels stride over the rest).
int grid_for(int64_t n, int per_block) {
  const int64_t wanted = (n + per_block - 1) / per_block;
  return static_cast<int>(wanted < 4096 ? wanted : 4096);
}

template <typename T>
void launch_draw(void* out, int64_t n, const Draw& f, uint64_t seed, const double* row_max,
                 cudaStream_t stream) {
  const int threads = 256;
  draw_kernel<<<grid_for(n, threads), threads, 0, stream>>>(static_cast<T*>(out), n, f, seed,
                                                            row_max);
}

}  // namespace

/// Fills out[0, n) with the family `f` in `into`'s dtype on `cuda_stream`; `row_max`: a device
/// buffer of n / f.row doubles (clustered_max only), filled first.
cudaError_t fill_device_draw(void* out, DrawInto into, int64_t n, const Draw& f, uint64_t seed,
                             double* row_max, cudaStream_t cuda_stream) {
  if (n <= 0) return cudaSuccess;
  if (f.kind == Draw::Kind::clustered_max) {
    const int64_t rows = n / f.row;
    row_max_kernel<<<grid_for(rows, 1), 256, 0, cuda_stream>>>(row_max, rows, f.row, seed);
  }
  switch (into) {
    case DrawInto::f64:
      launch_draw<double>(out, n, f, seed, row_max, cuda_stream);
      break;
    case DrawInto::f32:
      launch_draw<float>(out, n, f, seed, row_max, cuda_stream);
      break;
    case DrawInto::f16:
      launch_draw<__half>(out, n, f, seed, row_max, cuda_stream);
      break;
    case DrawInto::bf16:
      launch_draw<__nv_bfloat16>(out, n, f, seed, row_max, cuda_stream);
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
