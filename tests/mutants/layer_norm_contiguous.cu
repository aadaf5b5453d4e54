// Mutant: layer_norm that declares it takes strided views (accepts_strided) but indexes x as if it
// were contiguous (row r at r * N, element j at j), ignoring x's strides. Right on contiguous and
// misaligned (offset) inputs; on a strided view it normalizes the wrong elements. The layout
// family (its strided cases) must reject it.
// Correct twin: kernels/layer_norm/layer_norm_block.cu (which honours every stride).
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
__global__ void layer_norm_assumes_contiguous(const T* x, const T* w, const T* b, T* y, int64_t n,
                                              float eps, int64_t ws, int64_t bs, int64_t ys0,
                                              int64_t ys1) {
  __shared__ float scratch[32];
  const T* xr =
      x + static_cast<int64_t>(blockIdx.x) * n;  // BUG: x's row stride and column stride ignored
  T* yr = y + static_cast<int64_t>(blockIdx.x) * ys0;
  const float p = to_float(xr[0]);
  float s1 = 0.f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s1 += to_float(xr[j]) - p;
  const float mean_d = block_reduce<false>(s1, scratch) / static_cast<float>(n);
  float s2 = 0.f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float d = (to_float(xr[j]) - p) - mean_d;
    s2 += d * d;
  }
  const float rstd = rsqrtf(block_reduce<false>(s2, scratch) / static_cast<float>(n) + eps);
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float d = (to_float(xr[j]) - p) - mean_d;
    yr[j * ys1] = from_float<T>(d * rstd * to_float(w[j * ws]) + to_float(b[j * bs]));
  }
}

template <typename T>
void run(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& w = call.inputs.at(1);
  const auto& b = call.inputs.at(2);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  layer_norm_assumes_contiguous<T>
      <<<static_cast<unsigned>(rows), 256, 0, static_cast<cudaStream_t>(call.stream)>>>(
          x.as<const T>(), w.as<const T>(), b.as<const T>(), y.as<T>(), n,
          static_cast<float>(call.attributes.at("eps")), w.strides[0], b.strides[0], y.strides[0],
          y.strides[1]);
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
      throw Error(ErrorKind::usage, "mutant_layer_norm_contiguous: unsupported dtype");
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_layer_norm_contiguous";
  k.op = "layer_norm";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32, DType::f16, DType::bf16};
  k.tile_sizes = {256};
  k.accepts_strided = true;  // the claim the kernel does not keep
  k.accepts_unaligned = true;
  k.source = "tests/mutants/layer_norm_contiguous.cu";
  k.mutant = true;
  k.expected_catch = "layout";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
