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

/// A value family drawn straight into the case's dtype (one launch, no float64 tensor): element i
/// in float64 as make_values's chain of ATen operators computes it (draw -> operators ->
/// .to(dtype)), each step rounded as those operators round it, so that the values equal the
/// chain's bit for bit (the references test's Values suite, on either device).
struct Draw {
  enum class Kind : int {
    /// ((x * scale) + shift) * post of the primary stream's normal (or uniform) draws, a step left
    /// out where its flag is off (adding 0.0 would turn -0.0 into +0.0)
    affine,
    constant,       ///< `constant` everywhere (drawn once, on the host)
    clustered_max,  ///< where(pick < 0.5, the row's max, x) over rows of `row` elements
    pm_pairs,  ///< x, then each odd element of a row's leading pairs the negation of the one before
    special,   ///< x with about 0.4% each of +inf, -inf, NaN, +0 and -0 by the pick stream
  };
  Kind kind = Kind::affine;
  bool gaussian = true;
  double scale = 1, shift = 0, post = 1;
  bool has_scale = false, has_shift = false, has_post = false;
  double constant = 0;
  int64_t row = 1;  // the last dim's length (clustered_max, pm_pairs)
};

/// The float dtypes a family is drawn into directly (a float64 value rounds to float first, then
/// to 16 bits: ATen's double -> Half/BFloat16 conversion).
enum class DrawInto : int { f64, f32, f16, bf16 };

#if defined(__CUDA_ARCH__)  // device code: no multiply-add contraction
#define KGATE_NOCONTRACT_MUL(a, b) __dmul_rn(a, b)
#define KGATE_NOCONTRACT_ADD(a, b) __dadd_rn(a, b)
#define KGATE_QUIET_NAN __longlong_as_double(0x7FF8000000000000LL)
#define KGATE_INFINITY __longlong_as_double(0x7FF0000000000000LL)
#else
#define KGATE_NOCONTRACT_MUL(a, b) ((a) * (b))
#define KGATE_NOCONTRACT_ADD(a, b) ((a) + (b))
#define KGATE_QUIET_NAN std::nan("")
#define KGATE_INFINITY HUGE_VAL
#endif

/// Element i of the family in float64 (before the dtype's rounding); `row_max`: the maxima of the
/// rows' primary draws (clustered_max only).
KGATE_HOST_DEVICE inline double draw_value(const Draw& f, uint64_t seed, uint64_t i,
                                           const double* row_max) {
  switch (f.kind) {
    case Draw::Kind::constant:
      return f.constant;
    case Draw::Kind::clustered_max:
      return uniform(seed, kPick, i) < 0.5 ? row_max[static_cast<int64_t>(i) / f.row]
                                           : normal(seed, kPrimary, i);
    case Draw::Kind::pm_pairs: {
      const int64_t j = static_cast<int64_t>(i) % f.row;
      if (f.row >= 2 && (j & 1) && j < f.row / 2 * 2) return -normal(seed, kPrimary, i - 1);
      return normal(seed, kPrimary, i);
    }
    case Draw::Kind::special: {
      const double pick = uniform(seed, kPick, i);
      if (pick < 0.004) return KGATE_INFINITY;
      if (pick < 0.008) return -KGATE_INFINITY;
      if (pick < 0.012) return KGATE_QUIET_NAN;
      if (pick < 0.016) return 0.0;
      if (pick < 0.020) return -0.0;
      return normal(seed, kPrimary, i);
    }
    case Draw::Kind::affine:
      break;
  }
  double x = f.gaussian ? normal(seed, kPrimary, i) : uniform(seed, kPrimary, i);
  if (f.has_scale) x = KGATE_NOCONTRACT_MUL(x, f.scale);
  if (f.has_shift) x = KGATE_NOCONTRACT_ADD(x, f.shift);
  if (f.has_post) x = KGATE_NOCONTRACT_MUL(x, f.post);
  return x;
}

}  // namespace kgate::values
