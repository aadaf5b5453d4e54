// Mutant: gelu that also stores each result back into its input (using x as scratch space, as an
// "in-place when possible" optimization would). The output is right; the caller's input is not.
// The input checksum catches it in any family; expected: random.
// Correct twin: gelu_elementwise (kernels/gelu/package_gelu_elementwise).
#include <cuda_runtime.h>

#include "core/error.hpp"
#include "kernels/common/elementwise.cuh"
#include "kernels/common/softmax_math.cuh"
#include "kernels/gelu/gelu_math.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::mutants {
namespace {

using kernels::elementwise_blocks;
using kernels::from_float;
using kernels::gelu_erf;
using kernels::kElementwiseThreads;
using kernels::to_float;

template <typename T>
__global__ void gelu_clobbering(T* x, T* y, int64_t rows, int64_t n, int64_t xs0, int64_t xs1,
                                int64_t ys0, int64_t ys1) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / n, c = i % n;
    const T out = from_float<T>(gelu_erf(to_float(x[r * xs0 + c * xs1])));
    y[r * ys0 + c * ys1] = out;
    x[r * xs0 + c * xs1] = out;  // BUG: writes into the input
  }
}

template <typename T>
void run(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  gelu_clobbering<T><<<elementwise_blocks(rows * n), kElementwiseThreads, 0,
                       static_cast<cudaStream_t>(call.stream)>>>(
      static_cast<T*>(x.data), y.as<T>(), rows, n, x.strides[0], x.strides[1], y.strides[0],
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
      throw Error(ErrorKind::usage, "mutant_gelu_writes_input: unsupported dtype");
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_gelu_writes_input";
  k.op = "gelu";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32, DType::f16, DType::bf16};
  k.tile_sizes = {kElementwiseThreads};
  k.source = "tests/mutants/gelu_writes_input.cu";
  k.mutant = true;
  k.expected_catch = "random";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
