// Mutant: softmax that ignores the tail of rows whose length is not a multiple of its 32-wide tile
// (the classic "forgot the remainder loop" bug). The ragged family must reject it.
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
__global__ void softmax_full_tiles_only(const T* x, T* y, int64_t rows, int64_t n, int64_t xs,
                                        int64_t ys) {
  const int lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * 4 + (threadIdx.x >> 5);
  if (row >= rows) return;
  const int64_t full = n / 32 * 32;  // BUG: the last n % 32 elements are never read or written
  float m = -INFINITY;
  for (int64_t c = lane; c < full; c += 32) m = fmaxf(m, to_float(x[row * xs + c]));
  m = warp_max(m);
  float s = 0.f;
  for (int64_t c = lane; c < full; c += 32) s += expf(to_float(x[row * xs + c]) - m);
  s = warp_sum(s);
  for (int64_t c = lane; c < full; c += 32)
    y[row * ys + c] = from_float<T>(expf(to_float(x[row * xs + c]) - m) / s);
}

template <typename T>
void run(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  softmax_full_tiles_only<T>
      <<<static_cast<unsigned>((rows + 3) / 4), 128, 0, static_cast<cudaStream_t>(call.stream)>>>(
          x.as<const T>(), y.as<T>(), rows, n, x.strides[0], y.strides[0]);
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
      throw Error(ErrorKind::usage, "mutant_softmax_tail_dropped: unsupported dtype");
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_softmax_tail_dropped";
  k.op = "softmax";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32, DType::f16, DType::bf16};
  k.tile_sizes = {32};
  k.source = "tests/mutants/softmax_tail_dropped.cu";
  k.mutant = true;
  k.expected_catch = "ragged";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
