// group_norm_block: group_norm of x:[B,G,CG,HW] (C = G*CG channels in G groups) with weight and
// bias:[G,CG], for f32, f16 and bf16, any sizes and strides (scalar accesses).
// One 512-thread block per (batch, group), three passes in float. The device code lives in
// package/group_norm_groups.cuh, shared with the package group_norm_block_pkg (package/kgate.json
// describes this launch), so checking the package checks this kernel's device code.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/group_norm/package/group_norm_groups.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels {
namespace {

constexpr int kThreads = 512;  // groups are long (CG * HW): shorter per-thread float sums

template <typename T>
void run(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& w = call.inputs.at(1);
  const TensorView& b = call.inputs.at(2);
  const TensorView& y = call.outputs.at(0);
  if (x.dim() != 4 || w.dim() != 2 || b.dim() != 2 || y.dim() != 4)
    throw Error(ErrorKind::usage,
                "group_norm_block: expects x:[B,G,CG,HW], weight/bias:[G,CG], y:[B,G,CG,HW]");
  const int64_t groups = x.sizes[1], hw = x.sizes[3], group_size = x.sizes[2] * x.sizes[3];
  const int64_t blocks = x.sizes[0] * groups;
  if (blocks == 0 || group_size == 0) return;
  if (blocks > 2147483647LL)
    throw Error(ErrorKind::usage, "group_norm_block: more than 2^31-1 groups");
  const float eps = static_cast<float>(call.attributes.at("eps"));
  kgate_device::group_norm_groups<T>
      <<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(call.stream)>>>(
          x.as<const T>(), w.as<const T>(), b.as<const T>(), y.as<T>(), eps, groups, hw, group_size,
          x.strides[0], x.strides[1], x.strides[2], x.strides[3], y.strides[0], y.strides[1],
          y.strides[2], y.strides[3], w.strides[0], w.strides[1], b.strides[0], b.strides[1]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch(const KernelCall& call) {
  dispatch_floating(call.inputs.at(0).dtype, "group_norm_block",
                    [&](auto t) { run<element_t<decltype(t)>>(call); });
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k = cuda_kernel("group_norm_block", "group_norm",
                             "kernels/group_norm/group_norm_block.cu", launch);
  k.tile_sizes = {kThreads};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;  // correctness twin for the mutant suite, not a tuned kernel
  return k;
})());

}  // namespace
}  // namespace kgate::kernels
