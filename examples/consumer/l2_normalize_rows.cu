// l2_normalize_rows: the op of l2_normalize.op.json for f32, f16 and bf16, rows of any length
// (contiguous within a row; any row stride). L2N_DROP_TAIL builds the wrong twin.
#include <cuda_runtime.h>

#include <stdexcept>

#include "l2_normalize_rows.cuh"
#include "runtime/dispatch.hpp"  // dispatch_floating, cuda_kernel
#include "runtime/kernel.hpp"

#ifndef L2N_DROP_TAIL
#define L2N_DROP_TAIL false
#define L2N_NAME "l2_normalize_rows"
#else
#define L2N_NAME "l2_normalize_rows_tail_dropped"
#endif

namespace {

template <typename T>
void run(const kgate::KernelCall& call) {
  const kgate::TensorView& x = call.inputs.at(0);
  const kgate::TensorView& y = call.outputs.at(0);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  l2n::normalize_rows<T, L2N_DROP_TAIL><<<static_cast<unsigned>(rows), 256, 0, static_cast<cudaStream_t>(call.stream)>>>(
      x.as<const T>(), y.as<T>(), n, x.strides[0], y.strides[0], static_cast<float>(call.attributes.at("eps")));
  if (cudaGetLastError() != cudaSuccess) throw std::runtime_error(L2N_NAME ": launch failed");
}

void launch(const kgate::KernelCall& call) {
  kgate::dispatch_floating(call.inputs.at(0).dtype, L2N_NAME,
                           [&](auto t) { run<kgate::element_t<decltype(t)>>(call); });
}

KGATE_REGISTER_KERNEL(([] {
  kgate::KernelInfo k = kgate::cuda_kernel(L2N_NAME, "l2_normalize", __FILE__, launch);
  k.tile_sizes = {256};
  return k;
})());

}  // namespace
