// Counter-based random values: element i of stream s under seed k is a pure function of (k, s, i),
// so a tensor of any size is drawn in parallel, on the GPU or the CPU, with no generator state.
// The same integer hash runs on both; the normal transform (Box-Muller) uses log/sqrt/cos, whose
// last float64 bit may differ between the CPU's libm and CUDA's, so values agree bit for bit on
// the same kind of device and to an ulp of float64 (far below any dtype under test) across kinds.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define KGATE_HOST_DEVICE __host__ __device__
#else
#define KGATE_HOST_DEVICE
#endif

namespace kgate::values {

/// The streams a value family draws from (one per independent use in one tensor).
enum Stream : uint64_t { kPrimary = 0, kPick = 1, kConstant = 2 };

KGATE_HOST_DEVICE inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// A uniform value in (0, 1] from 53 hashed bits.
KGATE_HOST_DEVICE inline double uniform(uint64_t seed, uint64_t stream, uint64_t i) {
  const uint64_t key = mix64(seed ^ mix64(stream + 0x9E3779B97F4A7C15ULL));
  const uint64_t z = mix64(key + (i + 1) * 0x9E3779B97F4A7C15ULL);
  return (static_cast<double>(z >> 11) + 1.0) * 0x1.0p-53;
}

/// A standard normal value (Box-Muller over the counters 2i and 2i+1).
KGATE_HOST_DEVICE inline double normal(uint64_t seed, uint64_t stream, uint64_t i) {
  const double u1 = uniform(seed, stream, 2 * i);
  const double u2 = uniform(seed, stream, 2 * i + 1);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

}  // namespace kgate::values
