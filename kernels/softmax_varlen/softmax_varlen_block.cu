// softmax_varlen_block: softmax over each member of a packed batch, x:[T] with int32
// cu_seqlens:[S+1] (offsets), y:[T], for f32, f16 and bf16, any member lengths (0 included) and
// any strides of x and y. One 512-thread block per member, three passes over it in float. The
// device code lives in package/softmax_varlen_members.cuh, shared with the package
// softmax_varlen_block_pkg (package/kgate.json describes this launch), so checking the package
// checks this kernel's device code.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/softmax_varlen/package/softmax_varlen_members.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels {
namespace {

constexpr int kThreads = 512;

template <typename T>
void run(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& cu = call.inputs.at(1);
  const TensorView& y = call.outputs.at(0);
  if (x.dim() != 1 || cu.dim() != 1 || y.dim() != 1 || cu.dtype != DType::i32 || cu.sizes[0] < 1)
    throw Error(ErrorKind::usage,
                "softmax_varlen_block: expects x:[T], int32 cu_seqlens:[S+1], y:[T]");
  if (cu.sizes[0] > 1 && cu.strides[0] != 1)
    throw Error(ErrorKind::usage, "softmax_varlen_block: cu_seqlens must be contiguous");
  const int64_t members = cu.sizes[0] - 1;
  if (members == 0 || x.sizes[0] == 0) return;
  if (members > 2147483647LL)
    throw Error(ErrorKind::usage, "softmax_varlen_block: more than 2^31-1 members");
  kgate_device::softmax_varlen_members<T>
      <<<static_cast<unsigned>(members), kThreads, 0, static_cast<cudaStream_t>(call.stream)>>>(
          x.as<const T>(), cu.as<const int32_t>(), y.as<T>(), x.strides[0], y.strides[0]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch(const KernelCall& call) {
  dispatch_floating(call.inputs.at(0).dtype, "softmax_varlen_block",
                    [&](auto t) { run<element_t<decltype(t)>>(call); });
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k = cuda_kernel("softmax_varlen_block", "softmax_varlen",
                             "kernels/softmax_varlen/softmax_varlen_block.cu", launch);
  k.tile_sizes = {kThreads};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;  // correctness twin for the mutant suite, not a tuned kernel
  return k;
})());

}  // namespace
}  // namespace kgate::kernels
