// The mutants of quantize_int8_rows, whose right version is its package (package/, compiled into
// the build by kgate_add_kernel PACKAGE); this launcher is theirs alone. The kernel: the op of
// quantize_int8_per_token.op.json for f32, f16 and bf16 rows of any length and strides. The device
// code is package/quantize_int8_rows.cuh, shared with the package quantize_int8_rows_pkg: one block
// per row reduces |x| to the row's scale, then each element is divided by it and rounded to nearest
// even, as the op states. This source registers two mutants:
//   mutant_quantize_int8_truncates   q = (int)(x / scale): rounds toward zero
//   mutant_quantize_int8_signed_max  the scale from max(x), not max(|x|): rows led by a negative
//                                    value overflow and clamp
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/quantize_int8/package/quantize_int8_rows.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels {
namespace {

constexpr int kThreads = 256;

enum Variant { kCorrect = 0, kTruncates = 1, kSignedMax = 2 };

template <typename T, int kVariant>
void run(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& q = call.outputs.at(0);
  const TensorView& scale = call.outputs.at(1);
  const int64_t t = x.sizes[0], h = x.sizes[1];
  if (t == 0) return;
  kgate_device::quantize_int8_rows<T, kVariant>
      <<<static_cast<unsigned>(t), kThreads, 0, static_cast<cudaStream_t>(call.stream)>>>(
          x.as<const T>(), q.as<signed char>(), scale.as<float>(), h, x.strides[0], x.strides[1],
          q.strides[0], q.strides[1], scale.strides[0]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

template <int kVariant>
void launch(const KernelCall& call) {
  dispatch_floating(call.inputs.at(0).dtype, "quantize_int8_rows",
                    [&](auto t) { run<element_t<decltype(t)>, kVariant>(call); });
}

KernelInfo info(const char* name, void (*fn)(const KernelCall&), bool mutant, const char* catches) {
  KernelInfo k = cuda_kernel(name, "quantize_int8_per_token",
                             "kernels/quantize_int8/quantize_int8_rows.cu", fn);
  k.tile_sizes = {kThreads};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.mutant = mutant;
  k.expected_catch = catches;
  return k;
}

KGATE_REGISTER_KERNEL(info("mutant_quantize_int8_truncates", launch<kTruncates>, true, "random"));
KGATE_REGISTER_KERNEL(info("mutant_quantize_int8_signed_max", launch<kSignedMax>, true, "random"));

}  // namespace
}  // namespace kgate::kernels
