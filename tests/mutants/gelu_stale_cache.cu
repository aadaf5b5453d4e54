// Mutant: gelu that memoizes its output by shape and dtype — the first call of a shape computes
// and keeps a copy of y; every later call of that shape copies the kept result into y without
// looking at x. Each shape's first call is right, so cases of distinct shapes all pass; the stale
// check (the same shape again with other values, Runner::check_stale) must reject it.
// Expected: "stale" (the mutant suite runs the random family's cases through check_stale).
// Correct twin: gelu_elementwise (kernels/gelu/package_gelu_elementwise).
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

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

struct Memo {
  int64_t rows, n;
  DType dtype;
  void* data;
};

constexpr size_t kMaxMemoBytes = size_t{64} << 20;
constexpr size_t kMaxMemos = 256;

template <typename T>
__global__ void gelu_rows(const T* x, T* y, int64_t rows, int64_t n, int64_t xs0, int64_t xs1,
                          int64_t ys0, int64_t ys1) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / n, c = i % n;
    y[r * ys0 + c * ys1] = from_float<T>(gelu_erf(to_float(x[r * xs0 + c * xs1])));
  }
}

template <typename T>
void run(const KernelCall& call) {
  static std::vector<Memo> memos;
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  auto stream = static_cast<cudaStream_t>(call.stream);
  const size_t bytes = static_cast<size_t>(rows * n) * sizeof(T);
  if (y.is_contiguous()) {
    for (const auto& m : memos)
      if (m.rows == rows && m.n == n &&
          m.dtype == x.dtype) {  // BUG: keyed by shape, not by the input
        KGATE_CUDA_CALL(cudaMemcpyAsync(y.data, m.data, bytes, cudaMemcpyDeviceToDevice, stream));
        return;
      }
  }
  gelu_rows<T><<<elementwise_blocks(rows * n), kElementwiseThreads, 0, stream>>>(
      x.as<const T>(), y.as<T>(), rows, n, x.strides[0], x.strides[1], y.strides[0], y.strides[1]);
  KGATE_CUDA_CALL(cudaGetLastError());
  if (y.is_contiguous() && bytes <= kMaxMemoBytes && memos.size() < kMaxMemos) {
    Memo m{rows, n, x.dtype, nullptr};
    KGATE_CUDA_CALL(cudaMalloc(&m.data, bytes));
    KGATE_CUDA_CALL(cudaMemcpyAsync(m.data, y.data, bytes, cudaMemcpyDeviceToDevice, stream));
    memos.push_back(m);
  }
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
      throw Error(ErrorKind::usage, "mutant_gelu_stale_cache: unsupported dtype");
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_gelu_stale_cache";
  k.op = "gelu";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32, DType::f16, DType::bf16};
  k.tile_sizes = {kElementwiseThreads};
  k.source = "tests/mutants/gelu_stale_cache.cu";
  k.mutant = true;
  k.expected_catch = "stale";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
