// The mutants of fused_add_rms_norm_block, whose right version is its package (package/, compiled
// into the build by kgate_add_kernel PACKAGE); this launcher is theirs alone. The kernel: the op of
// fused_add_rms_norm.op.json (an op kgate does not build in), for f32, f16 and bf16, rows of any
// length, contiguous rows (any row stride; accepts_strided is false, so no case has a strided last
// dim). The device code is package/fused_add_rms_norm_rows.cuh, shared with the package
// fused_add_rms_norm_block_pkg (an exported package of an op that only an op file declares).
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/fused_add_rms_norm/package/fused_add_rms_norm_rows.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels {
namespace {

constexpr int kThreads = 256;

template <typename T, int kVariant>
void run(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& r = call.inputs.at(1);
  const TensorView& w = call.inputs.at(2);
  const TensorView& y = call.outputs.at(0);
  const TensorView& o = call.outputs.at(1);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  kgate_device::fused_add_rms_norm_rows<T, kVariant>
      <<<static_cast<unsigned>(rows), kThreads, 0, static_cast<cudaStream_t>(call.stream)>>>(
          x.as<const T>(), r.as<const T>(), w.as<const T>(), y.as<T>(), o.as<T>(), n,
          static_cast<float>(call.attributes.at("eps")), x.strides[0], r.strides[0], y.strides[0],
          o.strides[0]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

template <int kVariant>
void launch(const KernelCall& call) {
  dispatch_floating(call.inputs.at(0).dtype, "fused_add_rms_norm_block",
                    [&](auto t) { run<element_t<decltype(t)>, kVariant>(call); });
}

KernelInfo info(const char* name, void (*fn)(const KernelCall&), bool mutant, const char* catches) {
  KernelInfo k = cuda_kernel(name, "fused_add_rms_norm",
                             "kernels/fused_add_rms_norm/fused_add_rms_norm_block.cu", fn);
  k.tile_sizes = {kThreads};
  k.accepts_strided = false;
  k.accepts_unaligned = true;
  k.mutant = mutant;
  k.expected_catch = catches;
  return k;
}

KGATE_REGISTER_KERNEL(info("mutant_fused_add_rms_norm_tail_dropped", launch<1>, true, "ragged"));
KGATE_REGISTER_KERNEL(info("mutant_fused_add_rms_norm_norms_x", launch<2>, true, "random"));

}  // namespace
}  // namespace kgate::kernels
