// Mutant: embedding that reads its int64 indices through an int32 pointer (a narrowing "fast path"
// written for int32 index tensors). Index t then reads the low or high half of int64 element t/2,
// so rows come from the wrong places (mostly row 0). With T = 1 it is right by luck. The random
// family must reject it.
// Correct twin: kernels/embedding/embedding_gather.cu.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/common/elementwise.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::mutants {
namespace {

using kernels::elementwise_blocks;
using kernels::kElementwiseThreads;

template <typename Bits>
__global__ void embedding_narrow_indices(const Bits* w, const void* indices, Bits* y, int64_t t,
                                         int64_t v, int64_t d, int64_t w0, int64_t w1, int64_t is,
                                         int64_t y0, int64_t y1) {
  const int32_t* idx = static_cast<const int32_t*>(indices);  // BUG: the indices are int64
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < t * d;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / d, c = i % d;
    const int64_t row = idx[r * is];
    if (row < 0 || row >= v) continue;
    y[r * y0 + c * y1] = w[row * w0 + c * w1];
  }
}

template <typename Bits>
void run(const KernelCall& call) {
  const auto& w = call.inputs.at(0);
  const auto& idx = call.inputs.at(1);
  const auto& y = call.outputs.at(0);
  const int64_t t = idx.sizes[0], v = w.sizes[0], d = w.sizes[1];
  if (t == 0 || d == 0) return;
  embedding_narrow_indices<Bits><<<elementwise_blocks(t * d), kElementwiseThreads, 0,
                                   static_cast<cudaStream_t>(call.stream)>>>(
      w.as<const Bits>(), idx.data, y.as<Bits>(), t, v, d, w.strides[0], w.strides[1],
      idx.strides[0], y.strides[0], y.strides[1]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch(const KernelCall& call) {
  switch (dtype_size(call.inputs.at(0).dtype)) {
    case 4:
      return run<uint32_t>(call);
    case 2:
      return run<uint16_t>(call);
    default:
      throw Error(ErrorKind::usage, "mutant_embedding_int32_indices: unsupported dtype");
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_embedding_int32_indices";
  k.op = "embedding";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32, DType::f16, DType::bf16};
  k.tile_sizes = {};
  k.source = "tests/mutants/embedding_int32_indices.cu";
  k.mutant = true;
  k.expected_catch = "random";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
