// softmax_varlen_block: softmax over each member of a packed batch, x:[T] with int32
// cu_seqlens:[S+1] (offsets), y:[T], for f32, f16 and bf16, any member lengths (0 included) and
// any strides of x and y. One 512-thread block per member, three passes over it in float (max,
// sum of exp(x - max), write exp(x - max) / sum), so NaN/Inf follow softmax: a NaN or +Inf in a
// member, or a member of only -Inf, makes the member NaN.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/common/softmax_math.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels {
namespace {

constexpr int kThreads = 512;

template <typename T>
__global__ void softmax_varlen_members(const T* __restrict__ x, const int32_t* __restrict__ cu,
                                       T* __restrict__ y, int64_t xs, int64_t ys) {
  __shared__ float scratch[32];
  const int64_t begin = cu[blockIdx.x], end = cu[blockIdx.x + 1];
  if (end <= begin) return;  // an empty member (uniform over the block)
  float m = -INFINITY;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) m = fmaxf(m, to_float(x[i * xs]));
  m = block_reduce<true>(m, scratch);
  float s = 0.f;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
    s += expf(to_float(x[i * xs]) - m);
  s = block_reduce<false>(s, scratch);
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
    y[i * ys] = from_float<T>(expf(to_float(x[i * xs]) - m) / s);
}

template <typename T>
void run(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& cu = call.inputs.at(1);
  const TensorView& y = call.outputs.at(0);
  if (x.dim() != 1 || cu.dim() != 1 || y.dim() != 1 || cu.dtype != DType::i32 || cu.sizes[0] < 1)
    throw Error(ErrorKind::usage,
                "softmax_varlen_block: expects x:[T], int32 cu_seqlens:[S+1], y:[T]");
  if (cu.sizes[0] > 1 && cu.strides[0] != 1)
    throw Error(ErrorKind::usage, "softmax_varlen_block: cu_seqlens must be contiguous");
  const int64_t members = cu.sizes[0] - 1;
  if (members == 0 || x.sizes[0] == 0) return;
  if (members > 2147483647LL)
    throw Error(ErrorKind::usage, "softmax_varlen_block: more than 2^31-1 members");
  softmax_varlen_members<T>
      <<<static_cast<unsigned>(members), kThreads, 0, static_cast<cudaStream_t>(call.stream)>>>(
          x.as<const T>(), cu.as<const int32_t>(), y.as<T>(), x.strides[0], y.strides[0]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch(const KernelCall& call) {
  switch (call.inputs.at(0).dtype) {
    case DType::f32: return run<float>(call);
    case DType::f16: return run<__half>(call);
    case DType::bf16: return run<__nv_bfloat16>(call);
    default: throw Error(ErrorKind::usage, "softmax_varlen_block: unsupported dtype");
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "softmax_varlen_block";
  k.op = "softmax_varlen";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32, DType::f16, DType::bf16};
  k.tile_sizes = {kThreads};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;  // correctness twin for the mutant suite, not a tuned kernel
  k.source = "kernels/softmax_varlen/softmax_varlen_block.cu";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::kernels
