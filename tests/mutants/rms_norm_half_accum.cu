// Mutant: rms_norm that accumulates the sum of squares in the storage type (half / bfloat16):
// each lane of a warp sums its elements with __hfma, then the warp adds the partial sums with
// __hadd. Fine on short and mid-size rows (32 lanes split the sum: up to a few thousand elements
// the error stays within the f16/bf16 tolerances, unless f16 overflows past 65504); on long rows
// each lane's running sum outgrows its increments (a bf16 sum of 2048 squares ~1 has ulp 16, so
// most squares round away), the rms comes out 1-40% low and y fails the tolerance 1.5-20x from
// N ~ 8K on. Declared f16/bf16 only (the same code in f32 would be correct). The ragged family,
// whose walk reaches rows of 8K-64K elements, must reject it.
// Correct twin: kernels/rms_norm/rms_norm_block.cu (float accumulation).
#include <cuda_runtime.h>

#include "core/error.hpp"
#include "kernels/common/softmax_math.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::mutants {
namespace {

using kernels::from_float;
using kernels::to_float;

constexpr int kRowsPerBlock = 4;

template <typename T>
__global__ void rms_norm_half_sum(const T* x, const T* w, T* y, int64_t rows, int64_t n, float eps,
                                  int64_t xs0, int64_t xs1, int64_t ws, int64_t ys0, int64_t ys1) {
  const int lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= rows) return;
  const T* xr = x + row * xs0;
  T* yr = y + row * ys0;
  T acc = from_float<T>(0.f);
  for (int64_t j = lane; j < n; j += 32)
    acc = __hfma(xr[j * xs1], xr[j * xs1], acc);  // BUG: T accumulator
  for (int o = 16; o > 0; o >>= 1) acc = __hadd(acc, __shfl_xor_sync(0xffffffffu, acc, o));
  const float inv_rms = rsqrtf(to_float(acc) / static_cast<float>(n) + eps);
  for (int64_t j = lane; j < n; j += 32)
    yr[j * ys1] = from_float<T>(to_float(xr[j * xs1]) * inv_rms * to_float(w[j * ws]));
}

template <typename T>
void run(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& w = call.inputs.at(1);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  const auto blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  rms_norm_half_sum<T><<<blocks, 32 * kRowsPerBlock, 0, static_cast<cudaStream_t>(call.stream)>>>(
      x.as<const T>(), w.as<const T>(), y.as<T>(), rows, n,
      static_cast<float>(call.attributes.at("eps")), x.strides[0], x.strides[1], w.strides[0],
      y.strides[0], y.strides[1]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch(const KernelCall& call) {
  switch (call.inputs.at(0).dtype) {
    case DType::f16:
      return run<__half>(call);
    case DType::bf16:
      return run<__nv_bfloat16>(call);
    default:
      throw Error(ErrorKind::usage, "mutant_rms_norm_half_accum: only f16 and bf16");
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_rms_norm_half_accum";
  k.op = "rms_norm";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f16, DType::bf16};
  k.tile_sizes = {32};
  k.source = "tests/mutants/rms_norm_half_accum.cu";
  k.mutant = true;
  k.expected_catch = "long";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
