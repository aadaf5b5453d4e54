// Mutant: log_softmax that treats NaN inputs as masked: the max (fmaxf) skips them and so does the
// sum, so a row holding a NaN comes out finite everywhere except at the NaN itself, where the
// reference (and the op's NaN contract) make the whole row NaN. The special family must reject it.
// Correct twin: kernels/log_softmax/log_softmax_block.cu.
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
__global__ void log_softmax_nan_masked(const T* x, T* y, int64_t n, int64_t xs, int64_t ys) {
  __shared__ float scratch[32];
  const T* xr = x + static_cast<int64_t>(blockIdx.x) * xs;
  T* yr = y + static_cast<int64_t>(blockIdx.x) * ys;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x) m = fmaxf(m, to_float(xr[c]));
  m = block_reduce<true>(m, scratch);
  float s = 0.f;
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x) {
    const float v = to_float(xr[c]);
    if (!isnan(v)) s += expf(v - m);  // BUG: NaN dropped instead of propagated
  }
  const float log_sum = logf(block_reduce<false>(s, scratch));
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x)
    yr[c] = from_float<T>((to_float(xr[c]) - m) - log_sum);
}

template <typename T>
void run(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  log_softmax_nan_masked<T>
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
      throw Error(ErrorKind::usage, "mutant_log_softmax_nan_dropped: unsupported dtype");
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_log_softmax_nan_dropped";
  k.op = "log_softmax";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32, DType::f16, DType::bf16};
  k.tile_sizes = {256};
  k.source = "tests/mutants/log_softmax_nan_dropped.cu";
  k.mutant = true;
  k.expected_catch = "special";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
