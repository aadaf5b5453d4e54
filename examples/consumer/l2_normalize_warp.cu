// l2_normalize_warp: a second CUDA kernel of the op, written as a team writes a kernel that has no
// package: a warp per row (8 rows a block), its device function and launcher in an anonymous
// namespace (nvcc names that namespace from the source's path; kgate's digests do not see the name,
// so the same code built in another directory is still UNCHANGED against its base).
#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace {

constexpr int kWarpsPerBlock = 8;

template <typename T>
__global__ void normalize_rows_warp(const T* x, T* y, int64_t rows, int64_t n, int64_t x_row_stride,
                                    int64_t y_row_stride, float eps) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = threadIdx.x % 32;
  const T* xr = x + row * x_row_stride;
  T* yr = y + row * y_row_stride;
  float sum = 0.f;
  for (int64_t i = lane; i < n; i += 32) {
    const float v = static_cast<float>(xr[i]);
    sum += v * v;
  }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  const float root = sqrtf(sum);
  const float norm = root < eps ? eps : root;  // (a NaN norm stays NaN, as the reference's)
  for (int64_t i = lane; i < n; i += 32) yr[i] = static_cast<T>(static_cast<float>(xr[i]) / norm);
}

template <typename T>
void run(const kgate::KernelCall& call) {
  const kgate::TensorView& x = call.inputs.at(0);
  const kgate::TensorView& y = call.outputs.at(0);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  const unsigned blocks = static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  normalize_rows_warp<T>
      <<<blocks, 32 * kWarpsPerBlock, 0, static_cast<cudaStream_t>(call.stream)>>>(
          x.as<const T>(), y.as<T>(), rows, n, x.strides[0], y.strides[0],
          static_cast<float>(call.attributes.at("eps")));
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw kgate::Error(kgate::ErrorKind::device,
                       std::string("l2_normalize_warp: ") + cudaGetErrorString(e));
}

void launch(const kgate::KernelCall& call) {
  kgate::dispatch_floating(call.inputs.at(0).dtype, "l2_normalize_warp",
                           [&](auto t) { run<kgate::element_t<decltype(t)>>(call); });
}

KGATE_REGISTER_KERNEL(([] {
  kgate::KernelInfo k = kgate::cuda_kernel("l2_normalize_warp", "l2_normalize", __FILE__, launch);
  k.tile_sizes = {32};        // a warp's stride over a row
  k.accepts_strided = false;  // contiguous inputs
  return k;
})());

}  // namespace
