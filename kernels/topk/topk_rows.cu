// topk_rows: the op of topk_last_dim.op.json for f32, f16 and bf16 rows of any length and strides,
// K <= 64. One block per row makes K passes; pass k finds the largest key below the key pass k-1
// found. A key orders values as torch.topk does (NaN above +Inf, -0.0 equal to +0.0) and breaks
// ties by the lower index, so equal values yield distinct indices. Its guard is rows of at most
// 4096 elements: K passes over a long row are slow (B=64, N=128256, K=50 took 51x eager's radix
// select on the H200, and 3.5x with a two-stage split into chunks), so longer rows fall back to
// torch.topk, as a deployed dispatcher would; kgate checks that fallback and does not time it.
// This source also registers three mutants:
//   mutant_topk_tie_index_repeated  right values, but an index is the first position holding its
//                                   value, so tied values repeat an index (only the index rule sees it)
//   mutant_topk_ties_skipped        a pass takes values strictly below the previous one: ties dropped
//   mutant_topk_nan_low             NaN counted as the smallest value instead of the largest
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/common/kgate_device.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxK = 64;
constexpr int64_t kMaxRow = 4096;  // the guard

enum Variant { kCorrect = 0, kTieIndexRepeated = 1, kTiesSkipped = 2, kNanLow = 3 };

// An unsigned image of a float that orders as the float does; NaN above everything (or below,
// for the mutant), -0.0 with +0.0.
template <int kVariant>
__device__ __forceinline__ uint32_t ordered(float v) {
  if (v != v) return kVariant == kNanLow ? 0u : 0xFFFFFFFFu;
  if (v == 0.f) v = 0.f;
  const uint32_t b = __float_as_uint(v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// key = ordered value in the high word, (2^32 - 2 - index) in the low word: larger is better, of
// equal values the lower index wins, and no key is 2^64 - 1 (the reduction adds one).
__device__ __forceinline__ unsigned long long make_key(uint32_t hi, int64_t j) {
  return (static_cast<unsigned long long>(hi) << 32) | (0xFFFFFFFEull - static_cast<unsigned long long>(j));
}
__device__ __forceinline__ int64_t key_index(unsigned long long key) {
  return static_cast<int64_t>(0xFFFFFFFEull - (key & 0xFFFFFFFFull));
}

__device__ __forceinline__ unsigned long long warp_max_u64(unsigned long long v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const unsigned long long other = __shfl_xor_sync(0xffffffffu, v, o);
    v = other > v ? other : v;
  }
  return v;
}

// Block-wide max through `scratch` (32 words of shared memory); every thread gets the result.
__device__ __forceinline__ unsigned long long block_max_u64(unsigned long long v, unsigned long long* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = warp_max_u64(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return warp_max_u64(lane < warps ? scratch[lane] : 0ull);
}

template <typename T, int kVariant>
__global__ void topk_rows_kernel(const T* __restrict__ x, T* __restrict__ values, long long* __restrict__ indices,
                                 int64_t n, int64_t k, int64_t x_row, int64_t x_col, int64_t v_row, int64_t v_col,
                                 int64_t i_row, int64_t i_col) {
  __shared__ unsigned long long scratch[32];
  const int64_t row = blockIdx.x;
  const T* xr = x + row * x_row;
  unsigned long long bound = ~0ull;
  for (int64_t p = 0; p < k; ++p) {
    unsigned long long best = 0;
    bool found = false;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const uint32_t hi = ordered<kVariant>(kgate_device::to_float(xr[j * x_col]));
      const unsigned long long key = make_key(hi, j);
      const bool below = kVariant == kTiesSkipped ? (p == 0 || hi < static_cast<uint32_t>(bound >> 32)) : key < bound;
      if (below && (!found || key > best)) {
        best = key;
        found = true;
      }
    }
    best = block_max_u64(found ? best + 1 : 0ull, scratch) - 1;  // +1: an empty thread never wins
    if (kVariant == kTieIndexRepeated) {
      // The first position holding the chosen value: the largest key with the same high word.
      unsigned long long first = 0;
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
        const uint32_t hi = ordered<kVariant>(kgate_device::to_float(xr[j * x_col]));
        const unsigned long long key = make_key(hi, j);
        if (hi == static_cast<uint32_t>(best >> 32) && key > first) first = key;
      }
      const unsigned long long chosen = best;
      best = block_max_u64(first, scratch);
      if (threadIdx.x == 0) {
        const int64_t j = key_index(chosen);
        values[row * v_row + p * v_col] = xr[j * x_col];
        indices[row * i_row + p * i_col] = key_index(best);
      }
      bound = chosen;
      continue;
    }
    if (threadIdx.x == 0) {
      const int64_t j = best == ~0ull ? 0 : key_index(best);  // ~0: no element qualified (ties skipped)
      values[row * v_row + p * v_col] = xr[j * x_col];
      indices[row * i_row + p * i_col] = j;
    }
    bound = best;
  }
}

template <typename T, int kVariant>
void run(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& values = call.outputs.at(0);
  const TensorView& indices = call.outputs.at(1);
  const int64_t b = x.sizes[0], n = x.sizes[1], k = values.sizes[1];
  if (k > kMaxK || n >= (int64_t{1} << 32) - 1)
    throw Error(ErrorKind::usage, "topk_rows: K <= 64 and N < 2^32 only (the guard says so)");
  if (b == 0 || k == 0) return;
  topk_rows_kernel<T, kVariant><<<static_cast<unsigned>(b), kThreads, 0, static_cast<cudaStream_t>(call.stream)>>>(
      x.as<const T>(), values.as<T>(), indices.as<long long>(), n, k, x.strides[0], x.strides[1], values.strides[0],
      values.strides[1], indices.strides[0], indices.strides[1]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

template <int kVariant>
void launch(const KernelCall& call) {
  switch (call.inputs.at(0).dtype) {
    case DType::f32: return run<float, kVariant>(call);
    case DType::f16: return run<__half, kVariant>(call);
    case DType::bf16: return run<__nv_bfloat16, kVariant>(call);
    default: throw Error(ErrorKind::usage, "topk_rows: f32, f16 or bf16 x only");
  }
}

KernelInfo info(const char* name, void (*fn)(const KernelCall&), bool mutant, const char* catches) {
  KernelInfo k;
  k.name = name;
  k.op = "topk_last_dim";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32, DType::f16, DType::bf16};
  k.tile_sizes = {kThreads, kMaxRow};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.source = "kernels/topk/topk_rows.cu";
  k.accepts = [](const KernelCall& call) { return call.inputs.at(0).sizes.at(1) <= kMaxRow; };
  k.rejection_reason = [](const KernelCall& call) {
    return "rows of " + std::to_string(call.inputs.at(0).sizes.at(1)) + " elements; the kernel takes at most " +
           std::to_string(kMaxRow);
  };
  k.mutant = mutant;
  k.expected_catch = catches;
  k.launch = fn;
  return k;
}

KGATE_REGISTER_KERNEL(info("topk_rows", launch<kCorrect>, false, ""));
KGATE_REGISTER_KERNEL(info("mutant_topk_tie_index_repeated", launch<kTieIndexRepeated>, true, "extreme"));
KGATE_REGISTER_KERNEL(info("mutant_topk_ties_skipped", launch<kTiesSkipped>, true, "extreme"));
KGATE_REGISTER_KERNEL(info("mutant_topk_nan_low", launch<kNanLow>, true, "special"));

}  // namespace
}  // namespace kgate::kernels
