// Mutant: adaptive_avg_pool2d that rounds the end of each window down (floor((i+1)*H/OH)) instead
// of up. Right when OH divides H and OW divides W; otherwise windows lose their last row or
// column (and a window can come out empty: 0/0 = NaN). The ragged family (odd sizes) must reject
// it. Correct twin: kernels/adaptive_avg_pool2d/adaptive_avg_pool2d_direct.cu.
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

struct Geometry {
  int64_t b, c, h, w, oh, ow;
  int64_t x[4], y[4];
};

template <typename T>
__global__ void pool_floor_windows(const T* x, T* y, Geometry g) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < g.b * g.c * g.oh * g.ow; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ow = i % g.ow, oh = (i / g.ow) % g.oh, plane = i / (g.ow * g.oh);
    const int64_t c = plane % g.c, b = plane / g.c;
    const int64_t h0 = oh * g.h / g.oh, h1 = (oh + 1) * g.h / g.oh;  // BUG: floor, not ceil
    const int64_t w0 = ow * g.w / g.ow, w1 = (ow + 1) * g.w / g.ow;  // BUG: floor, not ceil
    float sum = 0.f;
    for (int64_t ih = h0; ih < h1; ++ih)
      for (int64_t iw = w0; iw < w1; ++iw)
        sum += to_float(x[b * g.x[0] + c * g.x[1] + ih * g.x[2] + iw * g.x[3]]);
    const float avg = sum / static_cast<float>(h1 - h0) / static_cast<float>(w1 - w0);
    y[b * g.y[0] + c * g.y[1] + oh * g.y[2] + ow * g.y[3]] = from_float<T>(avg);
  }
}

template <typename T>
void run(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  Geometry g{x.sizes[0], x.sizes[1], x.sizes[2], x.sizes[3], y.sizes[2], y.sizes[3], {}, {}};
  const int64_t cells = g.b * g.c * g.oh * g.ow;
  if (cells == 0) return;
  for (int i = 0; i < 4; ++i) {
    g.x[i] = x.strides[i];
    g.y[i] = y.strides[i];
  }
  pool_floor_windows<T><<<elementwise_blocks(cells), kElementwiseThreads, 0,
                          static_cast<cudaStream_t>(call.stream)>>>(x.as<const T>(), y.as<T>(), g);
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
      throw Error(ErrorKind::usage, "mutant_adaptive_avg_pool2d_floor_end: unsupported dtype");
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_adaptive_avg_pool2d_floor_end";
  k.op = "adaptive_avg_pool2d";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32, DType::f16, DType::bf16};
  k.tile_sizes = {};
  k.source = "tests/mutants/adaptive_avg_pool2d_floor_end.cu";
  k.mutant = true;
  k.expected_catch = "ragged";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
