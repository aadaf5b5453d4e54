// silu_and_mul_vec: y[r, j] = silu(x[r, j]) * x[r, H + j] for x:[B,2H], y:[B,H], f32/f16/bf16.
// 16-byte vector loads and stores when both halves of every row and every output row start
// 16-byte aligned (base pointers, row strides and H all multiples of a vector); otherwise a scalar
// grid-stride kernel that takes any strides and alignment. The device code lives in
// package/silu_and_mul_rows.cuh, shared with the package silu_and_mul_vec_pkg (package/kgate.json
// describes this dispatch), so checking the package checks this kernel's device code.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/common/elementwise.cuh"
#include "kernels/silu_and_mul/package/silu_and_mul_rows.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels {
namespace {

template <typename T>
void run(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& y = call.outputs.at(0);
  if (x.dim() != 2 || y.dim() != 2 || x.sizes[1] != 2 * y.sizes[1] || x.sizes[0] != y.sizes[0])
    throw Error(ErrorKind::usage, "silu_and_mul_vec: expects x:[B,2H] and y:[B,H]");
  const int64_t rows = y.sizes[0], h = y.sizes[1];
  if (rows == 0 || h == 0) return;
  auto stream = static_cast<cudaStream_t>(call.stream);
  constexpr int64_t kN = kgate_device::Vec16<T>::kN;
  const bool vec = aligned16(x.data) && aligned16(y.data) && x.strides[1] == 1 &&
                   y.strides[1] == 1 && h % kN == 0 && x.strides[0] % kN == 0 &&
                   y.strides[0] % kN == 0;
  if (vec) {
    const int64_t hv = h / kN;
    kgate_device::silu_and_mul_vec16<T>
        <<<elementwise_blocks(rows * hv), kElementwiseThreads, 0, stream>>>(
            x.as<const T>(), y.as<T>(), rows, hv, x.strides[0], y.strides[0]);
  } else {
    kgate_device::silu_and_mul_scalar<T>
        <<<elementwise_blocks(rows * h), kElementwiseThreads, 0, stream>>>(
            x.as<const T>(), y.as<T>(), rows, h, x.strides[0], x.strides[1], y.strides[0],
            y.strides[1]);
  }
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch(const KernelCall& call) {
  dispatch_floating(call.inputs.at(0).dtype, "silu_and_mul_vec",
                    [&](auto t) { run<element_t<decltype(t)>>(call); });
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k = cuda_kernel("silu_and_mul_vec", "silu_and_mul",
                             "kernels/silu_and_mul/silu_and_mul_vec.cu", launch);
  k.tile_sizes = {4,
                  8};  // elements per 16-byte vector (f32; f16/bf16): H around them switches paths
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;  // correctness twin for the mutant suite, not a tuned kernel
  return k;
})());

}  // namespace
}  // namespace kgate::kernels
