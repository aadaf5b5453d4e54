// Mutant: silu_and_mul with 16-byte vector loads that assumes the base pointer is 16-byte aligned.
// It checks that H and the row strides are whole vectors, but not the address, and "aligns" each
// row pointer by rounding it down to 16 bytes — so a view that starts one element into its
// storage is read shifted by that element (silently: no misaligned-address fault). It declares
// accepts_unaligned like its twin. The layout family (offset cases) must reject it.
// Correct twin: kernels/silu_and_mul/silu_and_mul_vec.cu (vectors only for aligned addresses).
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/common/elementwise.cuh"
#include "kernels/common/softmax_math.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::mutants {
namespace {

using kernels::elementwise_blocks;
using kernels::from_float;
using kernels::kElementwiseThreads;
using kernels::to_float;
using kernels::Vec16;

__device__ __forceinline__ float silu_mul(float a, float b) { return a / (1.f + expf(-a)) * b; }

template <typename T>
__device__ __forceinline__ const Vec16<T>* round_down16(const T* p) {
  return reinterpret_cast<const Vec16<T>*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t{15});  // BUG
}

template <typename T>
__global__ void silu_and_mul_vec_rounded(const T* x, T* y, int64_t rows, int64_t hv, int64_t xs0,
                                         int64_t ys0) {
  using V = Vec16<T>;
  const int64_t h = hv * V::kN;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * hv;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / hv, j = i % hv;
    const V a = round_down16(x + r * xs0)[j];
    const V b = round_down16(x + r * xs0 + h)[j];
    V out;
#pragma unroll
    for (int k = 0; k < V::kN; ++k)
      out.v[k] = from_float<T>(silu_mul(to_float(a.v[k]), to_float(b.v[k])));
    reinterpret_cast<V*>(y + r * ys0)[j] = out;
  }
}

template <typename T>
__global__ void silu_and_mul_scalar(const T* x, T* y, int64_t rows, int64_t h, int64_t xs0,
                                    int64_t xs1, int64_t ys0, int64_t ys1) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * h;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / h, j = i % h;
    y[r * ys0 + j * ys1] = from_float<T>(
        silu_mul(to_float(x[r * xs0 + j * xs1]), to_float(x[r * xs0 + (j + h) * xs1])));
  }
}

template <typename T>
void run(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t rows = y.sizes[0], h = y.sizes[1];
  if (rows == 0 || h == 0) return;
  auto stream = static_cast<cudaStream_t>(call.stream);
  constexpr int64_t kN = Vec16<T>::kN;
  // BUG: no check that x.data and y.data are 16-byte aligned.
  if (x.strides[1] == 1 && y.strides[1] == 1 && h % kN == 0 && x.strides[0] % kN == 0 &&
      y.strides[0] % kN == 0) {
    silu_and_mul_vec_rounded<T>
        <<<elementwise_blocks(rows * h / kN), kElementwiseThreads, 0, stream>>>(
            x.as<const T>(), y.as<T>(), rows, h / kN, x.strides[0], y.strides[0]);
  } else {
    silu_and_mul_scalar<T><<<elementwise_blocks(rows * h), kElementwiseThreads, 0, stream>>>(
        x.as<const T>(), y.as<T>(), rows, h, x.strides[0], x.strides[1], y.strides[0],
        y.strides[1]);
  }
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
      throw Error(ErrorKind::usage, "mutant_silu_and_mul_aligned: unsupported dtype");
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_silu_and_mul_aligned";
  k.op = "silu_and_mul";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32, DType::f16, DType::bf16};
  k.tile_sizes = {4, 8};
  k.accepts_strided = false;
  k.accepts_unaligned = true;  // the claim the kernel does not keep
  k.source = "tests/mutants/silu_and_mul_aligned.cu";
  k.mutant = true;
  k.expected_catch = "layout";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
