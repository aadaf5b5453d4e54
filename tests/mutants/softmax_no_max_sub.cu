// Mutant: softmax computed as exp(x) / sum(exp(x)), without subtracting the row max first. Exact
// math, but exp overflows to Inf once x > 88 (in float), and Inf / Inf is NaN. The extreme family
// (logits up to half the dtype's max, and large_mean rows around 1000) must reject it.
// Correct twin: kernels/softmax/softmax_block.cu.
#include <cuda_runtime.h>

#include "core/error.hpp"
#include "kernels/common/softmax_math.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::mutants {
namespace {

using kernels::block_reduce;
using kernels::from_float;
using kernels::to_float;

template <typename T>
__global__ void softmax_unshifted(const T* x, T* y, int64_t n, int64_t xs, int64_t ys) {
  __shared__ float scratch[32];
  const T* xr = x + static_cast<int64_t>(blockIdx.x) * xs;
  T* yr = y + static_cast<int64_t>(blockIdx.x) * ys;
  float s = 0.f;
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x) s += expf(to_float(xr[c]));  // BUG: no max
  s = block_reduce<false>(s, scratch);
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x)
    yr[c] = from_float<T>(expf(to_float(xr[c])) / s);
}

template <typename T>
void run(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  softmax_unshifted<T>
      <<<static_cast<unsigned>(rows), 256, 0, static_cast<cudaStream_t>(call.stream)>>>(
          x.as<const T>(), y.as<T>(), n, x.strides[0], y.strides[0]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch(const KernelCall& call) {
  switch (call.inputs.at(0).dtype) {
    case DType::f32:
      return run<float>(call);
    case DType::f16:
      return run<__half>(call);
    case DType::bf16:
      return run<__nv_bfloat16>(call);
    default:
      throw Error(ErrorKind::usage, "mutant_softmax_no_max_sub: unsupported dtype");
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_softmax_no_max_sub";
  k.op = "softmax";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32, DType::f16, DType::bf16};
  k.tile_sizes = {256};
  k.source = "tests/mutants/softmax_no_max_sub.cu";
  k.mutant = true;
  k.expected_catch = "extreme";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
