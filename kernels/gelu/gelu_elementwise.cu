// gelu_elementwise: exact (erf) GELU over x:[B,N] for f32, f16 and bf16, any strides
// (the launch lives in gelu_elementwise.cuh, the device code in
// package_gelu_elementwise/gelu_kernels.cuh; package_gelu_elementwise/ is this kernel as a
// package).
#include "kernels/gelu/gelu_elementwise.cuh"
#include "runtime/dispatch.hpp"

namespace kgate::kernels {
namespace {

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k = cuda_kernel("gelu_elementwise", "gelu",
                             "kernels/gelu/gelu_elementwise.cu",
                             [](const KernelCall& call) {
                               gelu_detail::launch<false>(call, "gelu_elementwise");
                             });
  k.tile_sizes = {kElementwiseThreads};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;  // correctness twin for the mutant suite, not a tuned kernel
  return k;
})());

}  // namespace
}  // namespace kgate::kernels
