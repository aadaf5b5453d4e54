// rms_norm_block: rms_norm over the rows of x:[B,N] with weight:[N], for f32, f16 and bf16, any N
// and any strides (accepts strided and misaligned views; scalar accesses).
// One 256-thread block per row, two passes in float. The device code lives in
// package/rms_norm_rows.cuh, shared with the package rms_norm_block_pkg (package/kgate.json
// describes this launch), so checking the package checks this kernel's device code.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/rms_norm/package/rms_norm_rows.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels {
namespace {

constexpr int kThreads = 256;

template <typename T>
void run(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& w = call.inputs.at(1);
  const TensorView& y = call.outputs.at(0);
  if (x.dim() != 2 || w.dim() != 1 || y.dim() != 2)
    throw Error(ErrorKind::usage, "rms_norm_block: expects x:[B,N], weight:[N], y:[B,N]");
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  if (rows > 2147483647LL) throw Error(ErrorKind::usage, "rms_norm_block: more than 2^31-1 rows");
  const float eps = static_cast<float>(call.attributes.at("eps"));
  kgate_device::rms_norm_rows<T>
      <<<static_cast<unsigned>(rows), kThreads, 0, static_cast<cudaStream_t>(call.stream)>>>(
          x.as<const T>(), w.as<const T>(), y.as<T>(), n, eps, x.strides[0], x.strides[1],
          w.strides[0], y.strides[0], y.strides[1]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch(const KernelCall& call) {
  dispatch_floating(call.inputs.at(0).dtype, "rms_norm_block",
                    [&](auto t) { run<element_t<decltype(t)>>(call); });
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k = cuda_kernel("rms_norm_block", "rms_norm", "kernels/rms_norm/rms_norm_block.cu", launch);
  k.tile_sizes = {kThreads};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;  // correctness twin for the mutant suite, not a tuned kernel
  return k;
})());

}  // namespace
}  // namespace kgate::kernels
