// embedding_gather: y[t, :] = weight[indices[t], :] for weight:[V,D] (f32, f16, bf16), int64
// indices:[T] and y:[T,D], any strides. One warp per token (grid-stride over tokens), its lanes
// copying the row's elements as raw bits (NaN payloads included); an index outside [0, V) leaves
// its output row unwritten (the runner's poison shows it). The device code lives in
// package/embedding_rows.cuh, shared with the package embedding_gather_pkg (package/kgate.json
// describes this launch), so checking the package checks this kernel's device code.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/common/elementwise.cuh"
#include "kernels/embedding/package/embedding_rows.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels {
namespace {

template <typename Bits>
void run(const KernelCall& call) {
  const TensorView& w = call.inputs.at(0);
  const TensorView& idx = call.inputs.at(1);
  const TensorView& y = call.outputs.at(0);
  if (w.dim() != 2 || idx.dim() != 1 || y.dim() != 2 || idx.dtype != DType::i64)
    throw Error(ErrorKind::usage,
                "embedding_gather: expects weight:[V,D], int64 indices:[T], y:[T,D]");
  const int64_t t = idx.sizes[0], d = w.sizes[1];
  if (t == 0 || d == 0) return;
  kgate_device::embedding_rows<Bits>
      <<<elementwise_blocks(t * 32), kElementwiseThreads, 0,  // a warp per token
         static_cast<cudaStream_t>(call.stream)>>>(
          w.as<const Bits>(), idx.as<const kgate_device::i64>(), y.as<Bits>(), t, w.sizes[0], d,
          w.strides[0], w.strides[1], idx.strides[0], y.strides[0], y.strides[1]);
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
  KernelInfo k = cuda_kernel("embedding_gather", "embedding",
                             "kernels/embedding/embedding_gather.cu", launch);
  k.tile_sizes = {};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;  // correctness twin for the mutant suite, not a tuned kernel
  return k;
})());

}  // namespace
}  // namespace kgate::kernels
