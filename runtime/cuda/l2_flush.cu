// The L2 flush kernel: reads a buffer twice the L2 size, so every line a timed kernel left in L2
// (its outputs dirty) is written back here, and the next timed launch starts with an L2 that holds
// only clean lines of this buffer: it misses on its own data and evicts nothing that needs a write.
// A flush by cudaMemset instead leaves the whole L2 dirty, and the timed kernel then pays the
// write-back of up to an L2's worth of lines that are not its own work.
#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/cuda/timer.hpp"

namespace kgate::cuda {
namespace {

__global__ void read_flush_kernel(const int4* __restrict__ buffer, int64_t count, int* sink,
                                  ElementSwaps swaps) {
  // First the swaps checked timing queued for the next launch (one thread: a handful of elements).
  if (blockIdx.x == 0 && threadIdx.x == 0)
    for (int s = 0; s < swaps.count; ++s)
      for (int i = 0; i < swaps.size[s]; ++i) {
        const unsigned char t = swaps.a[s][i];
        swaps.a[s][i] = swaps.b[s][i];
        swaps.b[s][i] = t;
      }
  int acc = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += stride) {
    const int4 v = buffer[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  // The buffer holds zeros, so this never stores; the compiler cannot know that and keeps the
  // loads.
  if (acc != 0) *sink = acc;
}

// Swaps two elements of `size` bytes (checked timing's per-launch change of an input: the same
// values, in another order).
__global__ void swap_elements_kernel(unsigned char* a, unsigned char* b, int size) {
  for (int i = 0; i < size; ++i) {
    const unsigned char t = a[i];
    a[i] = b[i];
    b[i] = t;
  }
}

// Copies `count` 16-byte words (the speed-of-light ceiling: what a plain streaming kernel moves).
__global__ void copy_kernel(const int4* __restrict__ src, int4* __restrict__ dst, int64_t count) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += stride)
    dst[i] = src[i];
}

// The streaming kernels' grid: four blocks of 512 threads per multiprocessor (132 when unknown).
constexpr int kStreamThreads = 512;
int stream_blocks(int multiprocessors) { return (multiprocessors > 0 ? multiprocessors : 132) * 4; }

}  // namespace

/// Copies `bytes` (a multiple of 16, both 16-byte aligned) from `src` to `dst` on `stream`.
cudaError_t launch_copy(const void* src, void* dst, size_t bytes, int multiprocessors,
                        cudaStream_t stream) {
  const int64_t count = static_cast<int64_t>(bytes / sizeof(int4));
  copy_kernel<<<stream_blocks(multiprocessors), kStreamThreads, 0, stream>>>(
      static_cast<const int4*>(src), static_cast<int4*>(dst), count);
  return cudaGetLastError();
}

/// Launches the read flush over `bytes` of `buffer` (zero-filled, 16-byte aligned) on `stream`,
/// swapping `swaps` first.
cudaError_t launch_read_flush(const void* buffer, size_t bytes, int* sink, int multiprocessors,
                              const ElementSwaps& swaps, cudaStream_t stream) {
  const int64_t count = static_cast<int64_t>(bytes / sizeof(int4));
  read_flush_kernel<<<stream_blocks(multiprocessors), kStreamThreads, 0, stream>>>(
      static_cast<const int4*>(buffer), count, sink, swaps);
  return cudaGetLastError();
}

/// Swaps the `size`-byte elements at `a` and `b` (device memory) on `stream`: one thread.
cudaError_t launch_swap_elements(void* a, void* b, int size, cudaStream_t stream) {
  swap_elements_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned char*>(a),
                                            static_cast<unsigned char*>(b), size);
  return cudaGetLastError();
}

}  // namespace kgate::cuda
