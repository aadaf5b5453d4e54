// Mutant: silu_and_mul whose grid-stride loop runs to i <= B*H instead of i < B*H, so the thread
// that gets i = B*H writes one element past the end of y (with a value computed from the last
// element, so it reads nothing out of bounds). Every output element is right. The guard bands
// around the output catch it in any family; expected: random.
// Correct twin: kernels/silu_and_mul/silu_and_mul_vec.cu.
#include <cuda_runtime.h>

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

template <typename T>
__global__ void silu_and_mul_off_by_one(const T* x, T* y, int64_t rows, int64_t h, int64_t xs0,
                                        int64_t xs1, int64_t ys0, int64_t ys1) {
  const int64_t total = rows * h;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i <= total;  // BUG: <=
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t k = i < total ? i : total - 1;
    const int64_t r = k / h, j = k % h;
    const float a = to_float(x[r * xs0 + j * xs1]), b = to_float(x[r * xs0 + (j + h) * xs1]);
    y[(i / h) * ys0 + (i % h) * ys1] = from_float<T>(a / (1.f + expf(-a)) * b);
  }
}

template <typename T>
void run(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t rows = y.sizes[0], h = y.sizes[1];
  if (rows == 0 || h == 0) return;
  silu_and_mul_off_by_one<T><<<elementwise_blocks(rows * h + 1), kElementwiseThreads, 0,
                               static_cast<cudaStream_t>(call.stream)>>>(
      x.as<const T>(), y.as<T>(), rows, h, x.strides[0], x.strides[1], y.strides[0], y.strides[1]);
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
      throw Error(ErrorKind::usage, "mutant_silu_and_mul_write_past_end: unsupported dtype");
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_silu_and_mul_write_past_end";
  k.op = "silu_and_mul";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32, DType::f16, DType::bf16};
  k.tile_sizes = {kElementwiseThreads};
  k.source = "tests/mutants/silu_and_mul_write_past_end.cu";
  k.mutant = true;
  k.expected_catch = "random";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
