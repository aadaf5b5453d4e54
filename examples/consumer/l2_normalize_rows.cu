// l2_normalize_rows: the op of l2_normalize.op.json for f32, f16 and bf16, rows of any length
// (contiguous within a row; any row stride). L2N_DROP_TAIL builds the wrong twin.
#include <cuda_runtime.h>

#include <stdexcept>

#include "l2_normalize_rows.cuh"
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
  switch (call.inputs.at(0).dtype) {
    case kgate::DType::f32: return run<float>(call);
    case kgate::DType::f16: return run<__half>(call);
    case kgate::DType::bf16: return run<__nv_bfloat16>(call);
    default: throw std::runtime_error(L2N_NAME ": f32, f16 or bf16 only");
  }
}

KGATE_REGISTER_KERNEL(([] {
  kgate::KernelInfo k;
  k.name = L2N_NAME;
  k.op = "l2_normalize";
  k.backend = kgate::Backend::cuda;
  k.dtypes = {kgate::DType::f32, kgate::DType::f16, kgate::DType::bf16};
  k.tile_sizes = {256};
  k.source = __FILE__;
  k.launch = launch;
  return k;
})());

}  // namespace
