// Mutant: softmax whose row offset is computed in 32-bit int (row * n), the classic index bug that
// only shows once a tensor holds more than 2^31 elements: past that row the offset wraps negative,
// and the row is read from and written to the wrong place. Every case below 2^31 elements passes;
// the huge family must reject it.
#include <cuda_runtime.h>

#include "core/error.hpp"
#include "kernels/common/softmax_math.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::mutants {
namespace {

using kgate::kernels::from_float;
using kgate::kernels::to_float;
using kgate::kernels::warp_max;
using kgate::kernels::warp_sum;

template <typename T>
__global__ void softmax_int32_offset(const T* x, T* y, int64_t rows, int64_t n) {
  const int lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * 4 + (threadIdx.x >> 5);
  if (row >= rows) return;
  const int base = static_cast<int>(row * n);  // BUG: an int offset wraps past 2^31 elements
  float m = -INFINITY;
  for (int64_t c = lane; c < n; c += 32) m = fmaxf(m, to_float(x[base + c]));
  m = warp_max(m);
  float s = 0.f;
  for (int64_t c = lane; c < n; c += 32) s += expf(to_float(x[base + c]) - m);
  s = warp_sum(s);
  for (int64_t c = lane; c < n; c += 32)
    y[base + c] = from_float<T>(expf(to_float(x[base + c]) - m) / s);
}

template <typename T>
void run(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  softmax_int32_offset<T>
      <<<static_cast<unsigned>((rows + 3) / 4), 128, 0, static_cast<cudaStream_t>(call.stream)>>>(
          x.as<const T>(), y.as<T>(), rows, n);
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
      throw Error(ErrorKind::usage, "mutant_softmax_int32_offset: unsupported dtype");
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_softmax_int32_offset";
  k.op = "softmax";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32, DType::f16, DType::bf16};
  k.tile_sizes = {32};
  k.source = "tests/mutants/softmax_int32_offset.cu";
  k.mutant = true;
  k.expected_catch = "huge";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
