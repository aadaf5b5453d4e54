// embedding_gather: y[t, :] = weight[indices[t], :] for weight:[V,D] (f32, f16, bf16), int64
// indices:[T] and y:[T,D], any strides. One warp per token (grid-stride over tokens), its lanes
// copying the row's elements as raw bits (NaN payloads included); an index outside [0, V) leaves
// its output row unwritten (the runner's poison shows it).
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/common/elementwise.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels {
namespace {

struct Geometry {
  int64_t t, v, d;
  int64_t w0, w1, idx, y0, y1;  // strides
};

// Copies elements as raw bits of their size.
template <typename Bits>
__global__ void embedding_rows(const Bits* __restrict__ w, const int64_t* __restrict__ idx,
                               Bits* __restrict__ y, Geometry g) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x >> 5);
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
       t < g.t; t += warps) {
    const int64_t row = idx[t * g.idx];
    if (row < 0 || row >= g.v) continue;
    const Bits* src = w + row * g.w0;
    Bits* dst = y + t * g.y0;
    for (int64_t c = lane; c < g.d; c += 32) dst[c * g.y1] = src[c * g.w1];
  }
}

template <typename Bits>
void run(const KernelCall& call) {
  const TensorView& w = call.inputs.at(0);
  const TensorView& idx = call.inputs.at(1);
  const TensorView& y = call.outputs.at(0);
  if (w.dim() != 2 || idx.dim() != 1 || y.dim() != 2 || idx.dtype != DType::i64)
    throw Error(ErrorKind::usage,
                "embedding_gather: expects weight:[V,D], int64 indices:[T], y:[T,D]");
  const Geometry g{idx.sizes[0], w.sizes[0],     w.sizes[1],   w.strides[0],
                   w.strides[1], idx.strides[0], y.strides[0], y.strides[1]};
  if (g.t == 0 || g.d == 0) return;
  embedding_rows<Bits><<<elementwise_blocks(g.t * 32), kElementwiseThreads, 0,  // a warp per token
                         static_cast<cudaStream_t>(call.stream)>>>(
      w.as<const Bits>(), idx.as<const int64_t>(), y.as<Bits>(), g);
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch(const KernelCall& call) {
  switch (dtype_size(call.inputs.at(0).dtype)) {
    case 4: return run<uint32_t>(call);
    case 2: return run<uint16_t>(call);
    default: throw Error(ErrorKind::usage, "embedding_gather: unsupported dtype");
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "embedding_gather";
  k.op = "embedding";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32, DType::f16, DType::bf16};
  k.tile_sizes = {};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;  // correctness twin for the mutant suite, not a tuned kernel
  k.source = "kernels/embedding/embedding_gather.cu";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::kernels
