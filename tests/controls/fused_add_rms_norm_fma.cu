// control_fused_add_rms_norm_fma: the op of kernels/fused_add_rms_norm/package/
// fused_add_rms_norm.op.json (r = x + residual rounded to the dtype and written back into the
// residual, in place; y = r * rsqrt(mean(r^2) + eps) * weight), f32, f16 and bf16, contiguous
// rows (any row stride). One 128-thread block per row. Sum of squares in float: each thread
// sums r_j^2 for j = tid, tid + 128, ... written `sum += v * v`, which the default --fmad=true
// contracts into fused multiply-adds; then warp shuffle trees and one across the 4 warps through
// shared memory. Must pass.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/kgate_device.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace kgate::controls {
namespace {

constexpr int kThreads = 128;

/// res_out may be res (the residual is written in place): each element is read, then written,
/// by the same thread, and neither pointer is __restrict__.
template <typename T>
__global__ void fused_add_rms_norm_fma(const T* x, const T* res, const T* w, T* y, T* res_out,
                                       int64_t n, float eps, int64_t x_row, int64_t r_row,
                                       int64_t y_row, int64_t o_row) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const T* xr = x + row * x_row;
  const T* rr = res + row * r_row;
  T* yr = y + row * y_row;
  T* orow = res_out + row * o_row;
  float sum = 0.f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const T r =
        kgate_device::from_float<T>(kgate_device::to_float(xr[j]) + kgate_device::to_float(rr[j]));
    orow[j] = r;
    const float v = kgate_device::to_float(r);
    sum += v * v;
  }
  sum = kgate_device::block_reduce<false>(sum, scratch);
  const float inv_rms = rsqrtf(sum / static_cast<float>(n) + eps);
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
    yr[j] = kgate_device::from_float<T>(kgate_device::to_float(orow[j]) * inv_rms *
                                        kgate_device::to_float(w[j]));
}

template <typename T>
void run(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& r = call.inputs.at(1);
  const TensorView& w = call.inputs.at(2);
  const TensorView& y = call.outputs.at(0);
  const TensorView& o = call.outputs.at(1);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  fused_add_rms_norm_fma<T>
      <<<static_cast<unsigned>(rows), kThreads, 0, static_cast<cudaStream_t>(call.stream)>>>(
          x.as<const T>(), r.as<const T>(), w.as<const T>(), y.as<T>(), o.as<T>(), n,
          static_cast<float>(call.attributes.at("eps")), x.strides[0], r.strides[0], y.strides[0],
          o.strides[0]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch(const KernelCall& call) {
  dispatch_floating(call.inputs.at(0).dtype, "control_fused_add_rms_norm_fma",
                    [&](auto t) { run<element_t<decltype(t)>>(call); });
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k = cuda_kernel("control_fused_add_rms_norm_fma", "fused_add_rms_norm",
                             "tests/controls/fused_add_rms_norm_fma.cu", launch);
  k.tile_sizes = {kThreads};
  k.accepts_strided = false;  // unit stride along H; rows may lie apart
  k.accepts_unaligned = true;
  k.timed = false;
  k.mutant = true;
  k.control = true;
  k.expected_catch = "control";
  return k;
})());

}  // namespace
}  // namespace kgate::controls
