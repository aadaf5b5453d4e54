// CUDA's launch limits, declared once: what the manifest checker refuses before any call, what the
// launch planner refuses for a call, and the preset devices' defaults read them here. They hold on
// every GPU kgate runs on (compute capability 7.0 and later, CUDA 12.1 and later); the limits that
// differ between GPUs (shared memory per block opted in, SMs, L2) are device properties
// (runtime/package/device_props.hpp), not these.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kgate::cuda_limits {

/// Blocks per grid, per axis (x, y, z).
inline constexpr int64_t kGrid[3] = {2147483647, 65535, 65535};
/// Threads per block, per axis, and in all.
inline constexpr int64_t kBlock[3] = {1024, 1024, 64};
inline constexpr int64_t kThreadsPerBlock = 1024;
/// Blocks per thread-block cluster, the portable size (more needs a non-portable opt-in).
inline constexpr int64_t kClusterBlocks = 8;
/// Dynamic shared memory a block may have without raising its limit (bytes).
inline constexpr int64_t kSharedPerBlockDefault = 48 * 1024;
/// The most dynamic shared memory a block can have on any supported GPU (sm_90: 227 KiB).
inline constexpr int64_t kSharedPerBlockMax = 232448;
/// A kernel's parameter space (bytes).
inline constexpr std::size_t kParameterBytes = 32764;
/// The axes' names, for messages.
inline constexpr const char* kAxis[3] = {"x", "y", "z"};

}  // namespace kgate::cuda_limits
