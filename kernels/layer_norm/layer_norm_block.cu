// layer_norm_block: layer_norm over the rows of x:[B,N] with weight:[N] and bias:[N], for f32,
// f16 and bf16, any N and any strides (accepts strided and misaligned views; scalar accesses).
// One 256-thread block per row, three passes over the row in float:
//   1. s1 = sum(x - p) with p = the row's first element: differences from a value inside the row
//      keep a large mean from swallowing the spread (x - p is exact for x near p);
//   2. var = sum(((x - p) - mean_d)^2) / N (two-pass: no E[x^2] - E[x]^2 cancellation);
//   3. y = ((x - p) - mean_d) * rsqrt(var + eps) * weight + bias.
// A zero-variance row gives exactly bias (x - mean is exactly 0). A NaN or +-Inf in a row makes
// var NaN, so the whole row is NaN, as ATen's Welford reduction makes it.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/common/softmax_math.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels {
namespace {

constexpr int kThreads = 256;

struct Strides {
  int64_t x_row, x_col, w, b, y_row, y_col;
};

template <typename T>
__global__ void layer_norm_rows(const T* __restrict__ x, const T* __restrict__ w,
                                const T* __restrict__ b, T* __restrict__ y, int64_t n, float eps,
                                Strides s) {
  __shared__ float scratch[32];
  const T* xr = x + static_cast<int64_t>(blockIdx.x) * s.x_row;
  T* yr = y + static_cast<int64_t>(blockIdx.x) * s.y_row;
  const float p = to_float(xr[0]);
  float s1 = 0.f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s1 += to_float(xr[j * s.x_col]) - p;
  const float mean_d = block_reduce<false>(s1, scratch) / static_cast<float>(n);
  float s2 = 0.f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float d = (to_float(xr[j * s.x_col]) - p) - mean_d;
    s2 += d * d;
  }
  const float var = block_reduce<false>(s2, scratch) / static_cast<float>(n);
  const float rstd = rsqrtf(var + eps);
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float d = (to_float(xr[j * s.x_col]) - p) - mean_d;
    yr[j * s.y_col] = from_float<T>(d * rstd * to_float(w[j * s.w]) + to_float(b[j * s.b]));
  }
}

template <typename T>
void run(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& w = call.inputs.at(1);
  const TensorView& b = call.inputs.at(2);
  const TensorView& y = call.outputs.at(0);
  if (x.dim() != 2 || w.dim() != 1 || b.dim() != 1 || y.dim() != 2)
    throw Error(ErrorKind::usage,
                "layer_norm_block: expects x:[B,N], weight:[N], bias:[N], y:[B,N]");
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  if (rows > 2147483647LL) throw Error(ErrorKind::usage, "layer_norm_block: more than 2^31-1 rows");
  const float eps = static_cast<float>(call.attributes.at("eps"));
  const Strides s{x.strides[0], x.strides[1], w.strides[0],
                  b.strides[0], y.strides[0], y.strides[1]};
  layer_norm_rows<T>
      <<<static_cast<unsigned>(rows), kThreads, 0, static_cast<cudaStream_t>(call.stream)>>>(
          x.as<const T>(), w.as<const T>(), b.as<const T>(), y.as<T>(), n, eps, s);
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch(const KernelCall& call) {
  switch (call.inputs.at(0).dtype) {
    case DType::f32: return run<float>(call);
    case DType::f16: return run<__half>(call);
    case DType::bf16: return run<__nv_bfloat16>(call);
    default: throw Error(ErrorKind::usage, "layer_norm_block: unsupported dtype");
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "layer_norm_block";
  k.op = "layer_norm";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32, DType::f16, DType::bf16};
  k.tile_sizes = {kThreads};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;  // correctness twin for the mutant suite, not a tuned kernel
  k.source = "kernels/layer_norm/layer_norm_block.cu";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::kernels
