// group_norm_block: group_norm of x:[B,G,CG,HW] (C = G*CG channels in G groups) with weight and
// bias:[G,CG], for f32, f16 and bf16, any sizes and strides (scalar accesses).
// One 512-thread block per (batch, group): the CG*HW elements of the group, three passes in float
// as layer_norm_block does (differences from the group's first element, two-pass variance), then
// y = ((x - p) - mean_d) * rsqrt(var + eps) * weight[g,c] + bias[g,c]. A NaN or +-Inf in a group
// makes the whole group NaN, as ATen's Welford reduction makes it.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/common/softmax_math.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels {
namespace {

constexpr int kThreads = 512;  // groups are long (CG * HW): shorter per-thread float sums

struct Geometry {
  int64_t groups, hw, group_size;  // G, HW, CG * HW
  int64_t x[4], y[4], w[2], b[2];  // strides
};

// Offset of element k (of CG*HW) of a group, given the strides of the (CG, HW) dims.
__device__ __forceinline__ int64_t group_offset(int64_t k, int64_t hw, int64_t s_c, int64_t s_hw) {
  return (k / hw) * s_c + (k % hw) * s_hw;
}

template <typename T>
__global__ void group_norm_groups(const T* __restrict__ x, const T* __restrict__ w,
                                  const T* __restrict__ b, T* __restrict__ y, float eps,
                                  Geometry g) {
  __shared__ float scratch[32];
  const int64_t batch = blockIdx.x / g.groups, group = blockIdx.x % g.groups;
  const T* xg = x + batch * g.x[0] + group * g.x[1];
  T* yg = y + batch * g.y[0] + group * g.y[1];
  const T* wg = w + group * g.w[0];
  const T* bg = b + group * g.b[0];
  const float p = to_float(xg[0]);
  float s1 = 0.f;
  for (int64_t k = threadIdx.x; k < g.group_size; k += blockDim.x)
    s1 += to_float(xg[group_offset(k, g.hw, g.x[2], g.x[3])]) - p;
  const float mean_d = block_reduce<false>(s1, scratch) / static_cast<float>(g.group_size);
  float s2 = 0.f;
  for (int64_t k = threadIdx.x; k < g.group_size; k += blockDim.x) {
    const float d = (to_float(xg[group_offset(k, g.hw, g.x[2], g.x[3])]) - p) - mean_d;
    s2 += d * d;
  }
  const float rstd =
      rsqrtf(block_reduce<false>(s2, scratch) / static_cast<float>(g.group_size) + eps);
  for (int64_t k = threadIdx.x; k < g.group_size; k += blockDim.x) {
    const int64_t c = k / g.hw;
    const float d = (to_float(xg[group_offset(k, g.hw, g.x[2], g.x[3])]) - p) - mean_d;
    const float out = d * rstd * to_float(wg[c * g.w[1]]) + to_float(bg[c * g.b[1]]);
    yg[group_offset(k, g.hw, g.y[2], g.y[3])] = from_float<T>(out);
  }
}

template <typename T>
void run(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& w = call.inputs.at(1);
  const TensorView& b = call.inputs.at(2);
  const TensorView& y = call.outputs.at(0);
  if (x.dim() != 4 || w.dim() != 2 || b.dim() != 2 || y.dim() != 4)
    throw Error(ErrorKind::usage,
                "group_norm_block: expects x:[B,G,CG,HW], weight/bias:[G,CG], y:[B,G,CG,HW]");
  Geometry g{};
  g.groups = x.sizes[1];
  g.hw = x.sizes[3];
  g.group_size = x.sizes[2] * x.sizes[3];
  const int64_t blocks = x.sizes[0] * g.groups;
  if (blocks == 0 || g.group_size == 0) return;
  if (blocks > 2147483647LL)
    throw Error(ErrorKind::usage, "group_norm_block: more than 2^31-1 groups");
  for (int i = 0; i < 4; ++i) {
    g.x[i] = x.strides[i];
    g.y[i] = y.strides[i];
  }
  for (int i = 0; i < 2; ++i) {
    g.w[i] = w.strides[i];
    g.b[i] = b.strides[i];
  }
  const float eps = static_cast<float>(call.attributes.at("eps"));
  group_norm_groups<T>
      <<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(call.stream)>>>(
          x.as<const T>(), w.as<const T>(), b.as<const T>(), y.as<T>(), eps, g);
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch(const KernelCall& call) {
  switch (call.inputs.at(0).dtype) {
    case DType::f32: return run<float>(call);
    case DType::f16: return run<__half>(call);
    case DType::bf16: return run<__nv_bfloat16>(call);
    default: throw Error(ErrorKind::usage, "group_norm_block: unsupported dtype");
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "group_norm_block";
  k.op = "group_norm";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32, DType::f16, DType::bf16};
  k.tile_sizes = {kThreads};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;  // correctness twin for the mutant suite, not a tuned kernel
  k.source = "kernels/group_norm/group_norm_block.cu";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::kernels
