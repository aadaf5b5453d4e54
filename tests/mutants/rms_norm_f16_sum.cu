// Mutant: rms_norm (built in) for f32 whose sum of squares is kept in __half: one warp per row,
// each lane adds its squares (taken in float) into a __half running sum, then the warp adds the
// lanes' sums with __hadd in a shuffle tree. Every addition rounds to 11 significant bits (and
// a sum above 65504 overflows to Inf, making the row 0), so the rms is off by ~2^-11 relative or
// more on every row, where the f32 tolerance allows a few float32 roundings. The random family
// must reject it. Correct twin: kernels/rms_norm/rms_norm_block.cu (float accumulation).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::mutants {
namespace {

constexpr int kRowsPerBlock = 4;

__global__ void rms_norm_f16_sum(const float* x, const float* w, float* y, int64_t rows, int64_t n,
                                 float eps, int64_t xs0, int64_t xs1, int64_t ws, int64_t ys0,
                                 int64_t ys1) {
  const int lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= rows) return;  // whole warps leave: the shuffles below stay full-warp
  const float* xr = x + row * xs0;
  float* yr = y + row * ys0;
  __half acc = __float2half_rn(0.f);
  for (int64_t j = lane; j < n; j += 32) {
    const float v = xr[j * xs1];
    acc = __float2half_rn(__half2float(acc) + v * v);  // BUG: __half accumulator
  }
  for (int o = 16; o > 0; o >>= 1) acc = __hadd(acc, __shfl_xor_sync(0xffffffffu, acc, o));
  const float inv_rms = rsqrtf(__half2float(acc) / static_cast<float>(n) + eps);
  for (int64_t j = lane; j < n; j += 32) yr[j * ys1] = xr[j * xs1] * inv_rms * w[j * ws];
}

void launch(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& w = call.inputs.at(1);
  const TensorView& y = call.outputs.at(0);
  if (x.dtype != DType::f32) throw Error(ErrorKind::usage, "mutant_rms_norm_f16_sum: only f32");
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  const auto blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  rms_norm_f16_sum<<<blocks, 32 * kRowsPerBlock, 0, static_cast<cudaStream_t>(call.stream)>>>(
      x.as<const float>(), w.as<const float>(), y.as<float>(), rows, n,
      static_cast<float>(call.attributes.at("eps")), x.strides[0], x.strides[1], w.strides[0],
      y.strides[0], y.strides[1]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_rms_norm_f16_sum";
  k.op = "rms_norm";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32};
  k.tile_sizes = {32};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.source = "tests/mutants/rms_norm_f16_sum.cu";
  k.mutant = true;
  k.control = false;
  k.expected_catch = "random";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
