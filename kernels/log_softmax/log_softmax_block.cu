// log_softmax_block: row log_softmax over x:[B,N] for f32, f16 and bf16, any N.
//   N <= 1024: one warp per row, the row held in registers (one read, one write);
//   larger N:  one 512-thread block per row, three passes over the row (max, sum, write).
// Accumulation in float, NaN and Inf as ATen. Rows may start anywhere (scalar accesses); the last
// dim of x and y must be contiguous. The device code lives in package/log_softmax_rows.cuh, shared
// with the package log_softmax_block_pkg (package/kgate.json describes this dispatch), so checking
// the package checks this kernel's device code.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/log_softmax/package/log_softmax_rows.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels {
namespace {

constexpr int kWarpRowsPerBlock = kgate_device::kLogSoftmaxWarpRowsPerBlock;
constexpr int kBlock = 512;

template <typename T, int kElems>
void launch_warp(const T* x, T* y, int64_t rows, int64_t n, int64_t xs, int64_t ys,
                 cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>((rows + kWarpRowsPerBlock - 1) / kWarpRowsPerBlock);
  kgate_device::log_softmax_warp_rows<T, kElems>
      <<<blocks, 32 * kWarpRowsPerBlock, 0, stream>>>(x, y, rows, static_cast<int>(n), xs, ys);
}

template <typename T>
void run(const KernelCall& call) {
  const TensorView& xv = call.inputs.at(0);
  const TensorView& yv = call.outputs.at(0);
  if (xv.dim() != 2 || yv.dim() != 2)
    throw Error(ErrorKind::usage, "log_softmax_block: expects x:[B,N] and y:[B,N] (rank 2)");
  const int64_t rows = xv.sizes[0], n = xv.sizes[1];
  if (rows == 0 || n == 0) return;
  if (n > 1 && (xv.strides[1] != 1 || yv.strides[1] != 1))
    throw Error(ErrorKind::usage,
                "log_softmax_block: the last dim of x and y must be contiguous (stride 1)");
  if (rows > 2147483647LL)
    throw Error(ErrorKind::usage, "log_softmax_block: more than 2^31-1 rows");
  const T* x = xv.as<const T>();
  T* y = yv.as<T>();
  const int64_t xs = xv.strides[0], ys = yv.strides[0];
  auto stream = static_cast<cudaStream_t>(call.stream);
  if (n <= 32)
    launch_warp<T, 1>(x, y, rows, n, xs, ys, stream);
  else if (n <= 64)
    launch_warp<T, 2>(x, y, rows, n, xs, ys, stream);
  else if (n <= 128)
    launch_warp<T, 4>(x, y, rows, n, xs, ys, stream);
  else if (n <= 256)
    launch_warp<T, 8>(x, y, rows, n, xs, ys, stream);
  else if (n <= 512)
    launch_warp<T, 16>(x, y, rows, n, xs, ys, stream);
  else if (n <= 1024)
    launch_warp<T, 32>(x, y, rows, n, xs, ys, stream);
  else
    kgate_device::log_softmax_block_rows<T>
        <<<static_cast<unsigned>(rows), kBlock, 0, stream>>>(x, y, n, xs, ys);
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch(const KernelCall& call) {
  dispatch_floating(call.inputs.at(0).dtype, "log_softmax_block",
                    [&](auto t) { run<element_t<decltype(t)>>(call); });
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k = cuda_kernel("log_softmax_block", "log_softmax",
                             "kernels/log_softmax/log_softmax_block.cu", launch);
  k.tile_sizes = {32, 1024};
  k.accepts_strided = false;
  k.accepts_unaligned = true;
  k.timed = false;  // correctness twin for the mutant suite, not a tuned kernel
  return k;
})());

}  // namespace
}  // namespace kgate::kernels
