// adaptive_avg_pool2d_direct: x:[B,C,H,W] -> y:[B,C,OH,OW] for f32, f16 and bf16, any strides.
// One thread per output cell (grid-stride), the window summed in float, as ATen's kernel does. The
// device code lives in package/adaptive_avg_pool2d_cells.cuh, shared with the package
// adaptive_avg_pool2d_direct_pkg (package/kgate.json describes this launch), so checking the
// package checks this kernel's device code.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/adaptive_avg_pool2d/package/adaptive_avg_pool2d_cells.cuh"
#include "kernels/common/elementwise.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels {
namespace {

template <typename T>
void run(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& y = call.outputs.at(0);
  if (x.dim() != 4 || y.dim() != 4 || x.sizes[0] != y.sizes[0] || x.sizes[1] != y.sizes[1])
    throw Error(ErrorKind::usage,
                "adaptive_avg_pool2d_direct: expects x:[B,C,H,W] and y:[B,C,OH,OW]");
  const int64_t b = x.sizes[0], c = x.sizes[1], h = x.sizes[2], w = x.sizes[3];
  const int64_t oh = y.sizes[2], ow = y.sizes[3];
  const int64_t cells = b * c * oh * ow;
  if (cells == 0) return;
  if (h == 0 || w == 0)
    throw Error(ErrorKind::usage, "adaptive_avg_pool2d_direct: empty input plane");
  kgate_device::adaptive_avg_pool2d_cells<T><<<elementwise_blocks(cells), kElementwiseThreads, 0,
                                               static_cast<cudaStream_t>(call.stream)>>>(
      x.as<const T>(), y.as<T>(), b, c, h, w, oh, ow, x.strides[0], x.strides[1], x.strides[2],
      x.strides[3], y.strides[0], y.strides[1], y.strides[2], y.strides[3]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch(const KernelCall& call) {
  dispatch_floating(call.inputs.at(0).dtype, "adaptive_avg_pool2d_direct",
                    [&](auto t) { run<element_t<decltype(t)>>(call); });
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k = cuda_kernel("adaptive_avg_pool2d_direct", "adaptive_avg_pool2d",
                             "kernels/adaptive_avg_pool2d/adaptive_avg_pool2d_direct.cu", launch);
  k.tile_sizes = {};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;  // correctness twin for the mutant suite, not a tuned kernel
  return k;
})());

}  // namespace
}  // namespace kgate::kernels
