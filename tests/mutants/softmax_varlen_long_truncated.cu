// Mutant: softmax_varlen that caches each member in registers — 256 threads x 16 elements, so a
// member of up to 4096 elements — and silently ignores the rest of a longer member: its softmax
// is taken over the first 4096 elements and the tail of y is never written. Right whenever every
// member fits. The ragged family (very long members) must reject it.
// Correct twin: kernels/softmax_varlen/softmax_varlen_block.cu (any member length).
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/common/softmax_math.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::mutants {
namespace {

using kernels::block_reduce;
using kernels::from_float;
using kernels::to_float;

constexpr int kThreads = 256;
constexpr int kPerThread = 16;

template <typename T>
__global__ void softmax_varlen_registers(const T* x, const int32_t* cu, T* y, int64_t xs,
                                         int64_t ys) {
  __shared__ float scratch[32];
  const int64_t begin = cu[blockIdx.x], end = cu[blockIdx.x + 1];
  if (end <= begin) return;
  const int64_t len = end - begin;  // BUG: elements past kThreads * kPerThread are never touched
  float v[kPerThread];
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int64_t i = static_cast<int64_t>(k) * kThreads + threadIdx.x;
    v[k] = i < len ? to_float(x[(begin + i) * xs]) : -INFINITY;
    m = fmaxf(m, v[k]);
  }
  m = block_reduce<true>(m, scratch);
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int64_t i = static_cast<int64_t>(k) * kThreads + threadIdx.x;
    v[k] = i < len ? expf(v[k] - m) : 0.f;
    s += v[k];
  }
  s = block_reduce<false>(s, scratch);
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int64_t i = static_cast<int64_t>(k) * kThreads + threadIdx.x;
    if (i < len) y[(begin + i) * ys] = from_float<T>(v[k] / s);
  }
}

template <typename T>
void run(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& cu = call.inputs.at(1);
  const auto& y = call.outputs.at(0);
  const int64_t members = cu.sizes[0] - 1;
  if (members <= 0 || x.sizes[0] == 0) return;
  softmax_varlen_registers<T>
      <<<static_cast<unsigned>(members), kThreads, 0, static_cast<cudaStream_t>(call.stream)>>>(
          x.as<const T>(), cu.as<const int32_t>(), y.as<T>(), x.strides[0], y.strides[0]);
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
      throw Error(ErrorKind::usage, "mutant_softmax_varlen_long_truncated: unsupported dtype");
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_softmax_varlen_long_truncated";
  k.op = "softmax_varlen";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32, DType::f16, DType::bf16};
  k.tile_sizes = {kThreads * kPerThread};
  k.source = "tests/mutants/softmax_varlen_long_truncated.cu";
  k.mutant = true;
  k.expected_catch = "ragged";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
