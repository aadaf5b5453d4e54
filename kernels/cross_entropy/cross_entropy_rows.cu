// The mutants of cross_entropy_rows, whose right version is its package (package/, compiled into
// the build by kgate_add_kernel PACKAGE); this launcher is theirs alone. The kernel: the op of
// cross_entropy.op.json (mean cross-entropy with ignore_index) for f32, f16 and bf16 logits and
// int64 targets; rows of any length, any strides. The device code is package/cross_entropy_rows.cuh
// (two deterministic passes), shared with the package cross_entropy_rows_pkg; here the rows'
// scratch is a stream-ordered allocation. This source registers two mutants:
//   mutant_cross_entropy_ignored_counted  rows with target == ignore_index counted in the mean
//   mutant_cross_entropy_no_max_sub       exp(x) without subtracting the row max (overflows)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "core/error.hpp"
#include "kernels/cross_entropy/package/cross_entropy_rows.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels {
namespace {

constexpr int kThreads = 256;

template <typename T, int kVariant>
void run(const KernelCall& call) {
  const TensorView& logits = call.inputs.at(0);
  const TensorView& target = call.inputs.at(1);
  const TensorView& loss = call.outputs.at(0);
  const int64_t n = logits.sizes[0], c = logits.sizes[1];
  auto stream = static_cast<cudaStream_t>(call.stream);
  float* rows = nullptr;
  if (n > 0)
    KGATE_CUDA_CALL(cudaMallocAsync(reinterpret_cast<void**>(&rows),
                                    static_cast<size_t>(2 * n) * sizeof(float), stream));
  if (n > 0)
    kgate_device::cross_entropy_row_losses<T, kVariant>
        <<<static_cast<unsigned>(n), kThreads, 0, stream>>>(
            logits.as<const T>(), target.as<const long long>(), rows, c, logits.strides[0],
            logits.strides[1], target.strides[0],
            static_cast<int64_t>(std::llround(call.attributes.at("ignore_index"))));
  kgate_device::cross_entropy_mean<T><<<1, kThreads, 0, stream>>>(rows, n, loss.as<T>());
  KGATE_CUDA_CALL(cudaGetLastError());
  if (rows) KGATE_CUDA_CALL(cudaFreeAsync(rows, stream));
}

template <int kVariant>
void launch(const KernelCall& call) {
  dispatch_floating(call.inputs.at(0).dtype, "cross_entropy_rows",
                    [&](auto t) { run<element_t<decltype(t)>, kVariant>(call); });
}

KernelInfo info(const char* name, void (*fn)(const KernelCall&), bool mutant, const char* catches) {
  KernelInfo k =
      cuda_kernel(name, "cross_entropy", "kernels/cross_entropy/cross_entropy_rows.cu", fn);
  k.tile_sizes = {kThreads};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.mutant = mutant;
  k.expected_catch = catches;
  return k;
}

KGATE_REGISTER_KERNEL(info("mutant_cross_entropy_ignored_counted", launch<1>, true, "random"));
KGATE_REGISTER_KERNEL(info("mutant_cross_entropy_no_max_sub", launch<2>, true, "extreme"));

}  // namespace
}  // namespace kgate::kernels
