// Mutant: rms_norm that splits each row over several blocks (256 elements each) and combines their
// sums of squares with a plain read-modify-write of one float per row: every block reads the
// row's running total when it starts, adds its own part, and stores it back — no atomics, no
// ordering between the blocks. The blocks of a row run side by side, so most of their updates are
// lost and the rms comes out too small; how many depends on scheduling (nondeterministic). Rows of
// at most 256 elements have a single block and come out right. The random family must reject it.
// Correct twin: kernels/rms_norm/rms_norm_block.cu (one block per row).
#include <cuda_runtime.h>

#include <cstddef>

#include "core/error.hpp"
#include "kernels/common/softmax_math.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::mutants {
namespace {

using kernels::block_reduce;
using kernels::from_float;
using kernels::to_float;

constexpr int kChunk = 256;  // elements per block, one per thread

template <typename T>
__global__ void sum_squares_racy(const T* x, int64_t n, int64_t chunks, int64_t xs0, int64_t xs1,
                                 float* totals) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x / chunks, chunk = blockIdx.x % chunks;
  // BUG: the row's total is read at the start and written back at the end by every block of the
  // row.
  const float before = *static_cast<volatile float*>(&totals[row]);
  const int64_t j = chunk * kChunk + threadIdx.x;
  const float v = j < n ? to_float(x[row * xs0 + j * xs1]) : 0.f;
  const float part = block_reduce<false>(v * v, scratch);
  if (threadIdx.x == 0) *static_cast<volatile float*>(&totals[row]) = before + part;
}

template <typename T>
__global__ void scale_rows(const T* x, const T* w, T* y, int64_t n, float eps, const float* totals,
                           int64_t xs0, int64_t xs1, int64_t ws, int64_t ys0, int64_t ys1) {
  const int64_t row = blockIdx.x;
  const float inv_rms = rsqrtf(totals[row] / static_cast<float>(n) + eps);
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
    y[row * ys0 + j * ys1] =
        from_float<T>(to_float(x[row * xs0 + j * xs1]) * inv_rms * to_float(w[j * ws]));
}

// The per-row totals: a device buffer kept across calls, grown when needed.
float* totals_buffer(int64_t rows) {
  static float* buffer = nullptr;
  static int64_t capacity = 0;
  if (rows > capacity) {
    if (buffer) KGATE_CUDA_CALL(cudaFree(buffer));
    buffer = nullptr;
    KGATE_CUDA_CALL(cudaMalloc(&buffer, static_cast<size_t>(rows) * sizeof(float)));
    capacity = rows;
  }
  return buffer;
}

template <typename T>
void run(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& w = call.inputs.at(1);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  auto stream = static_cast<cudaStream_t>(call.stream);
  const float eps = static_cast<float>(call.attributes.at("eps"));
  float* totals = totals_buffer(rows);
  KGATE_CUDA_CALL(cudaMemsetAsync(totals, 0, static_cast<size_t>(rows) * sizeof(float), stream));
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  sum_squares_racy<T><<<static_cast<unsigned>(rows * chunks), kChunk, 0, stream>>>(
      x.as<const T>(), n, chunks, x.strides[0], x.strides[1], totals);
  scale_rows<T><<<static_cast<unsigned>(rows), 256, 0, stream>>>(
      x.as<const T>(), w.as<const T>(), y.as<T>(), n, eps, totals, x.strides[0], x.strides[1],
      w.strides[0], y.strides[0], y.strides[1]);
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
      throw Error(ErrorKind::usage, "mutant_rms_norm_split_race: unsupported dtype");
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_rms_norm_split_race";
  k.op = "rms_norm";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32, DType::f16, DType::bf16};
  k.tile_sizes = {kChunk};
  k.source = "tests/mutants/rms_norm_split_race.cu";
  k.mutant = true;
  k.expected_catch = "random";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
