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

/// A value family that is one stream's draws under an affine map, each step rounded to float64 as
/// ATen's separate operators round it: y = ((x * scale) + shift) * post, a step left out where its
/// flag is off (adding 0.0 would turn -0.0 into +0.0). Drawn straight into the case's dtype (one
/// launch, no float64 tensor): the values equal the chain draw -> operators -> .to(dtype) bit for
/// bit (references.values, on either device).
struct Affine {
  bool gaussian = true;
  double scale = 1, shift = 0, post = 1;
  bool has_scale = false, has_shift = false, has_post = false;
};

/// The float dtypes a family is drawn into directly (a float64 value rounds to float first, then
/// to 16 bits: ATen's double -> Half/BFloat16 conversion).
enum class DrawInto : int { f64, f32, f16, bf16 };

#if defined(__CUDA_ARCH__)  // device code: no multiply-add contraction
#define KGATE_NOCONTRACT_MUL(a, b) __dmul_rn(a, b)
#define KGATE_NOCONTRACT_ADD(a, b) __dadd_rn(a, b)
#else
#define KGATE_NOCONTRACT_MUL(a, b) ((a) * (b))
#define KGATE_NOCONTRACT_ADD(a, b) ((a) + (b))
#endif

/// Element i of the family in float64 (before the dtype's rounding).
KGATE_HOST_DEVICE inline double affine_value(const Affine& f, uint64_t seed, uint64_t stream,
                                             uint64_t i) {
  double x = f.gaussian ? normal(seed, stream, i) : uniform(seed, stream, i);
  if (f.has_scale) x = KGATE_NOCONTRACT_MUL(x, f.scale);
  if (f.has_shift) x = KGATE_NOCONTRACT_ADD(x, f.shift);
  if (f.has_post) x = KGATE_NOCONTRACT_MUL(x, f.post);
  return x;
}

}  // namespace kgate::values
