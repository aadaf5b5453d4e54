// Shared helpers of the elementwise kernels: grid-stride launch geometry and 16-byte vectors.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace kgate::kernels {

/// Threads per block of the grid-stride elementwise kernels.
constexpr int kElementwiseThreads = 256;

/// Blocks for a grid-stride loop over `work` items (at least 1, at most 2^20).
inline unsigned elementwise_blocks(int64_t work) {
  const int64_t blocks = (work + kElementwiseThreads - 1) / kElementwiseThreads;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, int64_t{1} << 20));
}

/// kN elements of T packed in 16 bytes, for one vector load or store.
template <typename T>
struct alignas(16) Vec16 {
  static constexpr int kN = 16 / sizeof(T);
  T v[kN];
};

/// True when `p` is 16-byte aligned.
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace kgate::kernels
