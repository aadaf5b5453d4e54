// The device code and launcher of control_rms_norm_tree_fma (rms_norm_orders.cu) and
// control_rms_norm_tree_nofma (rms_norm_tree_nofma.cu, the same text built with --fmad=false):
// rms_norm over rows of x:[B,N] (weight:[N]), f32, f16 and bf16, any strides. One 256-thread
// block per row. Sum of squares in float: each thread sums its elements j = tid, tid + 256, ...
// sequentially (`sum += v * v`, a fused multiply-add where the build contracts it), the 32 lanes
// of a warp add their sums in a shuffle tree (xor 16, 8, 4, 2, 1), and the 8 warp sums meet in
// shared memory and go through one more shuffle tree. y = x * rsqrt(sum / N + eps) * weight,
// rounded once to the dtype. Included by one .cu per build; the registration names the kernel.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "kernels/common/kgate_device.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace kgate::controls {
namespace {

constexpr int kTreeThreads = 256;

template <typename T>
__global__ void rms_norm_tree(const T* x, const T* w, T* y, int64_t n, float eps, int64_t xs0,
                              int64_t xs1, int64_t ws, int64_t ys0, int64_t ys1) {
  __shared__ float scratch[32];
  const T* xr = x + static_cast<int64_t>(blockIdx.x) * xs0;
  T* yr = y + static_cast<int64_t>(blockIdx.x) * ys0;
  float sum = 0.f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float v = kgate_device::to_float(xr[j * xs1]);
    sum += v * v;
  }
  sum = kgate_device::block_reduce<false>(sum, scratch);  // warp trees, then across the warps
  const float inv_rms = rsqrtf(sum / static_cast<float>(n) + eps);
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
    yr[j * ys1] = kgate_device::from_float<T>(kgate_device::to_float(xr[j * xs1]) * inv_rms *
                                              kgate_device::to_float(w[j * ws]));
}

template <typename T>
void run_tree(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& w = call.inputs.at(1);
  const TensorView& y = call.outputs.at(0);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  rms_norm_tree<T>
      <<<static_cast<unsigned>(rows), kTreeThreads, 0, static_cast<cudaStream_t>(call.stream)>>>(
          x.as<const T>(), w.as<const T>(), y.as<T>(), n,
          static_cast<float>(call.attributes.at("eps")), x.strides[0], x.strides[1], w.strides[0],
          y.strides[0], y.strides[1]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch_tree(const KernelCall& call) {
  dispatch_floating(call.inputs.at(0).dtype, "control_rms_norm_tree",
                    [&](auto t) { run_tree<element_t<decltype(t)>>(call); });
}

/// The KernelInfo of a control on rms_norm (f32, f16, bf16, any strides, not timed).
KernelInfo rms_norm_control(const char* name, const char* source, void (*fn)(const KernelCall&),
                            std::vector<int64_t> tiles) {
  KernelInfo k = cuda_kernel(name, "rms_norm", source, fn);
  k.tile_sizes = std::move(tiles);
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;
  k.mutant = true;
  k.control = true;
  k.expected_catch = "control";
  return k;
}

}  // namespace
}  // namespace kgate::controls
