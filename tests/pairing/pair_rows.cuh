// The CUDA kernels of the pairing project: l2_normalize over rows (contiguous within a row, any row
// stride), fp32 accumulation; one block per row (rows_block, any block size up to 1024) or one warp
// per row (rows_warp). extra_every = M > 0 is the extra work of PAIR_EXTRA_EVERY, reads of a
// scratch buffer of zeros whose sum is multiplied by `scale`, which the launchers pass as 0: the
// reads cannot be dropped, and the results do not change. In rows_block, one more block after every
// M rows reads a whole scratch row (1/M more rows read, about 1/(2M) more DRAM traffic, and the
// rows keep their latency: the grid grows by rows / M blocks). In rows_warp, every row also reads n
// / M scratch elements, each thread issuing its share before the row's own loads (ExtraLoads). M is
// an argument, not a template parameter: all variants run the same device code; only the host
// launcher's constant (and with it rows_block's grid) differs. (On the H200, extra work on every
// M-th row cost 3% to 13% at any M, since those rows were the kernel's tail; extra elements read by
// every row cost a floor of 1.5% to 6% whatever M, one more memory latency per row; rows_block's
// extra blocks cost 1.7% to 5.5% whatever M while the heads alone divided in 64 bits.)
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "runtime/kernel.hpp"

#ifndef PAIR_EXTRA_EVERY
#define PAIR_EXTRA_EVERY 0
#endif
#ifndef PAIR_SPIN_CYCLES
#define PAIR_SPIN_CYCLES 0
#endif

namespace pair {

// The sum of the squares of p[first], p[first + step], ... below n.
template <typename T>
__device__ float sum_squares(const T* p, int64_t n, int64_t first, int64_t step) {
  float sum = 0.f;
  for (int64_t i = first; i < n; i += step) {
    const float v = static_cast<float>(p[i]);
    sum += v * v;
  }
  return sum;
}

__device__ inline float warp_sum(float sum) {
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  return sum;
}

// The extra elements each row reads: n / M (none for M = 0, the base).
__host__ __device__ inline int64_t extra_length(int64_t n, int extra_every) {
  return extra_every > 0 ? n / extra_every : 0;
}

// The extra reads of one thread: up to four of q[first], q[first + step], ... below `extra`, issued
// at once (predicated loads, no dependence on the row's own loads), their squares summed only when
// finish() is called after the row's loop; any further ones (extra > 4 * step) in a loop there.
template <typename T>
struct ExtraLoads {
  float v[4] = {0.f, 0.f, 0.f, 0.f};
  const T* q;
  int64_t extra, first, step;
  __device__ ExtraLoads(const T* q_, int64_t extra_, int64_t first_, int64_t step_)
      : q(q_), extra(extra_), first(first_), step(step_) {
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (first + k * step < extra) v[k] = static_cast<float>(q[first + k * step]);
  }
  __device__ float finish() const {
    float sum = v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + v[3] * v[3];
    return sum + sum_squares(q, extra, first + 4 * step, step);
  }
};

// y = x / max(sqrt(sum), eps), where a NaN norm stays NaN (fmaxf would return eps).
template <typename T>
__device__ void scale_row(const T* xr, T* yr, int64_t n, int64_t first, int64_t step, float sum,
                          float eps) {
  const float root = sqrtf(sum);
  const float norm = root < eps ? eps : root;
  for (int64_t i = first; i < n; i += step)
    yr[i] = static_cast<T>(static_cast<float>(xr[i]) / norm);
}

// One block per row; blockDim.x a multiple of 32, up to 1024 (the block size is the launcher's).
// extra_every = M > 0: after every M rows' blocks comes one more block, which reads a row of n
// elements of the scratch buffer (zeros) and writes nothing (unless the sum it reads times `scale`,
// passed as 0, were huge): the kernel reads 1/M more rows, as a row's own work, and its rows keep
// their latency (launch_rows_block sizes the grid).
template <typename T>
__global__ void __launch_bounds__(1024)
    rows_block(const T* x, T* y, int64_t n, int64_t x_row_stride, int64_t y_row_stride, float eps,
               const T* scratch, float scale, int extra_every, long long spin_cycles) {
  // Every block of every variant runs the same instructions (one 32-bit division): with M = 0 the
  // period is 2^31 and no block is extra work. (A 64-bit division, in the heads alone, cost 1.7% to
  // 5.5% whatever M on the H200, as much as the extra blocks were meant to.)
  const unsigned b = blockIdx.x;
  const unsigned period = extra_every > 0 ? static_cast<unsigned>(extra_every) + 1u : 0x80000000u;
  const unsigned before = b / period;        // blocks of extra work before this one
  if (b - before * period == period - 1u) {  // a block of extra work
    const float s = warp_sum(
        sum_squares(scratch + static_cast<int64_t>(before) * n, n, threadIdx.x, blockDim.x));
    if (s * scale > 3e38f) y[0] = static_cast<T>(s);  // (never: keeps the reads)
    return;
  }
  const int64_t row = b - before;
  const T* xr = x + row * x_row_stride;
  T* yr = y + row * y_row_stride;
  float sum = sum_squares(xr, n, threadIdx.x, blockDim.x);
  sum = warp_sum(sum);
  __shared__ float warp_sums[32];  // (1024 threads at most)
  __shared__ float total;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    const float s = warp_sum(lane < static_cast<int>(blockDim.x / 32) ? warp_sums[lane] : 0.f);
    if (lane == 0) total = s;
  }
  __syncthreads();
  scale_row(xr, yr, n, threadIdx.x, blockDim.x, total, eps);
  // spin_cycles > 0 (PAIR_SPIN_CYCLES): the block's first thread holds the block that many SM
  // cycles longer, a cost that does not move with where the buffers land (extra memory traffic
  // does: its slowdown ranged 0.998 to 1.015 between processes on the H200). The base only tests
  // the 0.
  if (spin_cycles > 0 && threadIdx.x == 0) {
    const long long start = clock64();
    while (clock64() - start < spin_cycles) {
    }
  }
}

// One warp per row, blockDim.x / 32 rows per block.
template <typename T>
__global__ void rows_warp(const T* x, T* y, int64_t rows, int64_t n, int64_t x_row_stride,
                          int64_t y_row_stride, float eps, const T* scratch, float scale,
                          int extra_every) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;  // (the whole warp)
  const int lane = threadIdx.x % 32;
  const T* xr = x + row * x_row_stride;
  T* yr = y + row * y_row_stride;
  const int64_t extra = extra_length(n, extra_every);
  const ExtraLoads<T> more(scratch + row * extra, extra, lane, 32);
  float sum = sum_squares(xr, n, lane, 32);
  sum += scale * more.finish();
  scale_row(xr, yr, n, lane, 32, warp_sum(sum), eps);
}

// Host side. The scratch rows of extra_every = M: rows rows of n / M zeros, one buffer per
// element type, allocated once, grown as needed (zero-filled on the call's stream, before the
// launch that needs them).
template <typename T>
const T* scratch_rows(int64_t rows, int64_t n, int every, cudaStream_t stream, const char* kernel) {
  static void* buffer = nullptr;
  static size_t capacity = 0;
  const int64_t extra = extra_length(n, every);
  if (extra <= 0) return nullptr;
  const size_t bytes = static_cast<size_t>(rows) * static_cast<size_t>(extra) * sizeof(T);
  if (bytes > capacity) {
    if (buffer) cudaFree(buffer);
    buffer = nullptr;
    capacity = 0;
    if (cudaMalloc(&buffer, bytes) != cudaSuccess ||
        cudaMemsetAsync(buffer, 0, bytes, stream) != cudaSuccess) {
      cudaGetLastError();
      throw std::runtime_error(std::string(kernel) + ": cannot allocate " + std::to_string(bytes) +
                               " bytes of scratch rows");
    }
    capacity = bytes;
  }
  return static_cast<const T*>(buffer);
}

// rows_block<T> over the call, `block` threads per row, extra work every `extra_every` rows, each
// block held `spin_cycles` longer (both explicit: the two row kernels' TUs define different knobs,
// and an inline template reading a macro would be one definition for both).
template <typename T>
void launch_rows_block(const kgate::KernelCall& call, unsigned block, const char* kernel,
                       int extra_every, long long spin_cycles) {
  const kgate::TensorView& x = call.inputs.at(0);
  const kgate::TensorView& y = call.outputs.at(0);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  const auto stream = static_cast<cudaStream_t>(call.stream);
  // M > 0: rows / M blocks of extra work among the rows' (rows_block), each reading a scratch row.
  const int64_t extra_blocks = extra_every > 0 ? rows / extra_every : 0;
  const T* scratch = scratch_rows<T>(extra_blocks + 1, n, extra_every > 0 ? 1 : 0, stream, kernel);
  rows_block<T><<<static_cast<unsigned>(rows + extra_blocks), block, 0, stream>>>(
      x.as<const T>(), y.as<T>(), n, x.strides[0], y.strides[0],
      static_cast<float>(call.attributes.at("eps")), scratch, 0.f, extra_every, spin_cycles);
  if (cudaGetLastError() != cudaSuccess)
    throw std::runtime_error(std::string(kernel) + ": launch failed");
}

// rows_warp<T> over the call, `block` threads (block / 32 rows) per block.
template <typename T>
void launch_rows_warp(const kgate::KernelCall& call, unsigned block, const char* kernel,
                      int extra_every) {
  const kgate::TensorView& x = call.inputs.at(0);
  const kgate::TensorView& y = call.outputs.at(0);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  const auto stream = static_cast<cudaStream_t>(call.stream);
  const T* scratch = scratch_rows<T>(rows, n, extra_every, stream, kernel);
  const int64_t per_block = block / 32;
  rows_warp<T><<<static_cast<unsigned>((rows + per_block - 1) / per_block), block, 0, stream>>>(
      x.as<const T>(), y.as<T>(), rows, n, x.strides[0], y.strides[0],
      static_cast<float>(call.attributes.at("eps")), scratch, 0.f, extra_every);
  if (cudaGetLastError() != cudaSuccess)
    throw std::runtime_error(std::string(kernel) + ": launch failed");
}

}  // namespace pair
