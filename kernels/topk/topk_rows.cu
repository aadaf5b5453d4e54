// topk_rows: the op of topk_last_dim.op.json for f32, f16 and bf16 rows of any length and strides,
// K <= 64. The device code is package/topk_rows.cuh, shared with the package topk_rows_pkg: one
// block per row makes K passes, with keys that break ties by index. Its guard is rows of at most
// 4096 elements: K passes over a long row are slow (B=64, N=128256, K=50 took 51x eager's radix
// select on the H200, and 3.5x with a two-stage split into chunks), so longer rows fall back to
// torch.topk, as a deployed dispatcher would; kgate checks that fallback and does not time it.
// This source also registers three mutants:
//   mutant_topk_tie_index_repeated  right values, but an index is the first position holding its
//                                   value, so tied values repeat an index (only the index rule sees
//                                   it)
//   mutant_topk_ties_skipped        a pass takes values strictly below the previous one: ties
//   dropped mutant_topk_nan_low             NaN counted as the smallest value instead of the
//   largest
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/topk/package/topk_rows.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxK = 64;
constexpr int64_t kMaxRow = 4096;  // the guard

enum Variant { kCorrect = 0, kTieIndexRepeated = 1, kTiesSkipped = 2, kNanLow = 3 };

template <typename T, int kVariant>
void run(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& values = call.outputs.at(0);
  const TensorView& indices = call.outputs.at(1);
  const int64_t b = x.sizes[0], n = x.sizes[1], k = values.sizes[1];
  if (k > kMaxK || n >= (int64_t{1} << 32) - 1)
    throw Error(ErrorKind::usage, "topk_rows: K <= 64 and N < 2^32 only (the guard says so)");
  if (b == 0 || k == 0) return;
  kgate_device::topk_rows_kernel<T, kVariant>
      <<<static_cast<unsigned>(b), kThreads, 0, static_cast<cudaStream_t>(call.stream)>>>(
          x.as<const T>(), values.as<T>(), indices.as<long long>(), n, k, x.strides[0],
          x.strides[1], values.strides[0], values.strides[1], indices.strides[0],
          indices.strides[1]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

template <int kVariant>
void launch(const KernelCall& call) {
  dispatch_floating(call.inputs.at(0).dtype, "topk_rows",
                    [&](auto t) { run<element_t<decltype(t)>, kVariant>(call); });
}

KernelInfo info(const char* name, void (*fn)(const KernelCall&), bool mutant, const char* catches) {
  KernelInfo k = cuda_kernel(name, "topk_last_dim", "kernels/topk/topk_rows.cu", fn);
  k.tile_sizes = {kThreads, kMaxRow};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.accepts = [](const KernelCall& call) { return call.inputs.at(0).sizes.at(1) <= kMaxRow; };
  k.rejection_reason = [](const KernelCall& call) {
    return "rows of " + std::to_string(call.inputs.at(0).sizes.at(1)) +
           " elements; the kernel takes at most " + std::to_string(kMaxRow);
  };
  k.mutant = mutant;
  k.expected_catch = catches;
  return k;
}

KGATE_REGISTER_KERNEL(info("topk_rows", launch<kCorrect>, false, ""));
KGATE_REGISTER_KERNEL(info("mutant_topk_tie_index_repeated", launch<kTieIndexRepeated>, true,
                           "extreme"));
KGATE_REGISTER_KERNEL(info("mutant_topk_ties_skipped", launch<kTiesSkipped>, true, "extreme"));
KGATE_REGISTER_KERNEL(info("mutant_topk_nan_low", launch<kNanLow>, true, "special"));

}  // namespace
}  // namespace kgate::kernels
