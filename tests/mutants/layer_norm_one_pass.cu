// Mutant: layer_norm with the one-pass variance var = E[x^2] - E[x]^2 (both sums in one sweep, in
// float, clamped at 0). Exact math, but when the mean is large against the spread the two terms
// cancel and float keeps only the difference's leading bits: at mean/spread = 16 (the norms'
// large_mean) about 8 bits are lost, far beyond the f32 tolerance. Declared f32-only: at f16/bf16
// tolerances the same loss hides under the output rounding, so f32 is where it is observable.
// The extreme family (its large_mean cases) must reject it.
// Correct twin: kernels/layer_norm/layer_norm_block.cu.
#include <cuda_runtime.h>

#include "core/error.hpp"
#include "kernels/common/softmax_math.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::mutants {
namespace {

using kernels::block_reduce;

__global__ void layer_norm_one_pass(const float* x, const float* w, const float* b, float* y,
                                    int64_t n, float eps, int64_t xs0, int64_t xs1, int64_t ws,
                                    int64_t bs, int64_t ys0, int64_t ys1) {
  __shared__ float scratch[32];
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * xs0;
  float* yr = y + static_cast<int64_t>(blockIdx.x) * ys0;
  float s1 = 0.f, s2 = 0.f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float v = xr[j * xs1];
    s1 += v;
    s2 += v * v;
  }
  const float mean = block_reduce<false>(s1, scratch) / static_cast<float>(n);
  const float mean_sq = block_reduce<false>(s2, scratch) / static_cast<float>(n);
  const float var = fmaxf(mean_sq - mean * mean, 0.f);  // BUG: catastrophic cancellation
  const float rstd = rsqrtf(var + eps);
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
    yr[j * ys1] = (xr[j * xs1] - mean) * rstd * w[j * ws] + b[j * bs];
}

void launch(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& w = call.inputs.at(1);
  const auto& b = call.inputs.at(2);
  const auto& y = call.outputs.at(0);
  if (x.dtype != DType::f32) throw Error(ErrorKind::usage, "mutant_layer_norm_one_pass: only f32");
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  layer_norm_one_pass<<<static_cast<unsigned>(rows), 256, 0,
                        static_cast<cudaStream_t>(call.stream)>>>(
      x.as<const float>(), w.as<const float>(), b.as<const float>(), y.as<float>(), n,
      static_cast<float>(call.attributes.at("eps")), x.strides[0], x.strides[1], w.strides[0],
      b.strides[0], y.strides[0], y.strides[1]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_layer_norm_one_pass";
  k.op = "layer_norm";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32};
  k.tile_sizes = {256};
  k.source = "tests/mutants/layer_norm_one_pass.cu";
  k.mutant = true;
  k.expected_catch = "extreme";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
