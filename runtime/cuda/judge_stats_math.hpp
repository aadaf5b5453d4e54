// The element arithmetic of judge_stats.hpp, one text for the GPU kernel (judge_stats.cu) and the
// CPU loop (judge_stats.cpp). Each line restates an ATen expression the judge used to run, in the
// same IEEE double operations in the same order: a product then a sum are two roundings here as
// they were two operators there, so both files are compiled without floating contraction.
#pragma once

#include <cstdint>
#include <cstring>

#include "runtime/cuda/judge_stats.hpp"

#if defined(__CUDACC__)
#define KGATE_JUDGE_FN __host__ __device__ inline
#else
#define KGATE_JUDGE_FN inline
#endif

namespace kgate::cuda::judge::math {

KGATE_JUDGE_FN double from_bits(uint64_t b) {
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
}
KGATE_JUDGE_FN uint64_t to_bits(double d) {
  uint64_t b;
  memcpy(&b, &d, sizeof b);
  return b;
}
KGATE_JUDGE_FN float float_from_bits(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

constexpr uint64_t kExp = 0x7FF0000000000000ULL, kMan = 0x000FFFFFFFFFFFFFULL;
KGATE_JUDGE_FN bool finite(double x) { return (to_bits(x) & kExp) != kExp; }
KGATE_JUDGE_FN bool is_nan(double x) {
  const uint64_t b = to_bits(x);
  return (b & kExp) == kExp && (b & kMan) != 0;
}
KGATE_JUDGE_FN bool is_inf(double x) {
  const uint64_t b = to_bits(x);
  return (b & kExp) == kExp && (b & kMan) == 0;
}
KGATE_JUDGE_FN double abs(double x) { return from_bits(to_bits(x) & ~(uint64_t{1} << 63)); }
KGATE_JUDGE_FN double infinity() { return from_bits(kExp); }
KGATE_JUDGE_FN double quiet_nan() { return from_bits(0x7FF8000000000000ULL); }
/// at::sign: -1, 0 or 1 (0 for NaN).
KGATE_JUDGE_FN double sign(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }
/// torch.max / at::maximum: NaN wins.
KGATE_JUDGE_FN double maximum(double a, double b) {
  if (is_nan(a)) return a;
  if (is_nan(b)) return b;
  return b > a ? b : a;
}
/// clamp_min(x, 0): NaN stays.
KGATE_JUDGE_FN double clamp_min0(double x) { return is_nan(x) ? x : (x < 0 ? 0.0 : x); }

// Exact conversions of the narrow floating formats (sign and NaN kept).
KGATE_JUDGE_FN float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
  if (exp == 0x1F) return float_from_bits(sign | 0x7F800000u | (man << 13));
  if (exp == 0) {
    const float v = static_cast<float>(man) * 5.9604644775390625e-08f;  // man * 2^-24, exact
    return sign ? -v : v;
  }
  return float_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}
KGATE_JUDGE_FN float bf16_to_float(uint16_t h) {
  return float_from_bits(static_cast<uint32_t>(h) << 16);
}
KGATE_JUDGE_FN float e4m3_to_float(uint8_t v) {
  const uint32_t sign = static_cast<uint32_t>(v & 0x80u) << 24;
  const uint32_t exp = (v >> 3) & 0xFu, man = v & 0x7u;
  if (exp == 0xF && man == 0x7) return float_from_bits(sign | 0x7FC00000u);  // the one NaN
  if (exp == 0) {
    const float f = static_cast<float>(man) * 0.001953125f;  // man * 2^-9, exact
    return sign ? -f : f;
  }
  return float_from_bits(sign | ((exp + 120u) << 23) | (man << 20));
}

/// Element k of `o` as a double (Tensor.to(kDouble)).
KGATE_JUDGE_FN double load(const Operand& o, int64_t k) {
  switch (o.type) {
    case ElemType::f64:
      return static_cast<const double*>(o.data)[k];
    case ElemType::f32:
      return static_cast<double>(static_cast<const float*>(o.data)[k]);
    case ElemType::f16:
      return static_cast<double>(half_to_float(static_cast<const uint16_t*>(o.data)[k]));
    case ElemType::bf16:
      return static_cast<double>(bf16_to_float(static_cast<const uint16_t*>(o.data)[k]));
    case ElemType::f8e4m3:
      return static_cast<double>(e4m3_to_float(static_cast<const uint8_t*>(o.data)[k]));
    case ElemType::i8:
      return static_cast<double>(static_cast<const int8_t*>(o.data)[k]);
    case ElemType::u8:
      return static_cast<double>(static_cast<const uint8_t*>(o.data)[k]);
    case ElemType::i32:
      return static_cast<double>(static_cast<const int32_t*>(o.data)[k]);
    case ElemType::i64:
      return static_cast<double>(static_cast<const int64_t*>(o.data)[k]);
    case ElemType::b8:
      return static_cast<const uint8_t*>(o.data)[k] != 0 ? 1.0 : 0.0;
  }
  return 0;
}

KGATE_JUDGE_FN int size_of(ElemType t) {
  switch (t) {
    case ElemType::f64:
    case ElemType::i64:
      return 8;
    case ElemType::f32:
    case ElemType::i32:
      return 4;
    case ElemType::f16:
    case ElemType::bf16:
      return 2;
    default:
      return 1;
  }
}

/// Element k's bits as the signed integer of its size, widened (Tensor.view(intN).to(kLong)).
KGATE_JUDGE_FN int64_t load_bits(const Operand& o, int64_t k) {
  switch (size_of(o.type)) {
    case 8:
      return static_cast<const int64_t*>(o.data)[k];
    case 4:
      return static_cast<const int32_t*>(o.data)[k];
    case 2:
      return static_cast<const int16_t*>(o.data)[k];
    default:
      return static_cast<const int8_t*>(o.data)[k];
  }
}

/// Two's complement arithmetic on int64 (as ATen's integer kernels wrap).
KGATE_JUDGE_FN int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
KGATE_JUDGE_FN int64_t wrap_abs(int64_t a) {
  return a < 0 ? static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(a)) : a;
}

/// ordered_bits: the float's bits as an integer whose differences are ULP distances.
KGATE_JUDGE_FN int64_t ordered(int64_t b, int size) {
  const int64_t mask = size == 1   ? 0x7F
                       : size == 2 ? 0x7FFF
                       : size == 4 ? 0x7FFFFFFFLL
                                   : 0x7FFFFFFFFFFFFFFFLL;
  return b < 0 ? -(b & mask) : b;
}

constexpr int64_t kNoIndex = INT64_MAX;

/// The identity of combine().
KGATE_JUDGE_FN OutputStats identity() {
  OutputStats s;
  const double lowest = -infinity();
  s.ref_max_abs = s.ref_max_rel = s.worst_ratio = lowest;
  s.ref_nan_mismatches = s.ref_mismatches = 0;
  s.worst_index = kNoIndex;
  s.worst_out = s.worst_target = 0;
  for (int i = 0; i < kMaxSweep; ++i) s.needed_atol[i] = lowest;
  s.oracle_max_abs = s.oracle_max_rel = s.reference_vs_oracle_max_abs = s.relative_worst = lowest;
  s.oracle_nan_mismatches = s.relative_mismatches = 0;
  s.max_ulp = INT64_MIN;
  s.unwritten = s.fingerprint = 0;
  return s;
}

/// argmax's choice between (a, ia) and (b, ib): the larger, NaN largest, the first index on ties.
KGATE_JUDGE_FN bool takes(double a, int64_t ia, double b, int64_t ib) {
  const bool na = is_nan(a), nb = is_nan(b);
  if (na || nb) return nb && (!na || ib < ia);
  return b > a || (b == a && ib < ia);
}

/// Folds `b` into `a` (any order gives the same figures).
KGATE_JUDGE_FN void combine(OutputStats& a, const OutputStats& b) {
  a.ref_max_abs = maximum(a.ref_max_abs, b.ref_max_abs);
  a.ref_max_rel = maximum(a.ref_max_rel, b.ref_max_rel);
  a.ref_nan_mismatches += b.ref_nan_mismatches;
  a.ref_mismatches += b.ref_mismatches;
  if (takes(a.worst_ratio, a.worst_index, b.worst_ratio, b.worst_index)) {
    a.worst_ratio = b.worst_ratio;
    a.worst_index = b.worst_index;
  }
  for (int i = 0; i < kMaxSweep; ++i)
    a.needed_atol[i] = maximum(a.needed_atol[i], b.needed_atol[i]);
  a.oracle_max_abs = maximum(a.oracle_max_abs, b.oracle_max_abs);
  a.oracle_max_rel = maximum(a.oracle_max_rel, b.oracle_max_rel);
  a.oracle_nan_mismatches += b.oracle_nan_mismatches;
  a.reference_vs_oracle_max_abs =
      maximum(a.reference_vs_oracle_max_abs, b.reference_vs_oracle_max_abs);
  a.relative_worst = maximum(a.relative_worst, b.relative_worst);
  a.relative_mismatches += b.relative_mismatches;
  if (b.max_ulp > a.max_ulp) a.max_ulp = b.max_ulp;
  a.unwritten += b.unwritten;
  a.fingerprint = static_cast<int64_t>(static_cast<uint64_t>(a.fingerprint) +
                                       static_cast<uint64_t>(b.fingerprint));
}

/// where(isfinite(out) & isfinite(target), |out - target|, 0), and whether both were finite.
KGATE_JUDGE_FN double finite_diff(double out, double target, bool& both_finite) {
  both_finite = finite(out) && finite(target);
  return both_finite ? abs(out - target) : 0.0;
}

/// A NaN/Inf pattern that differs: not both finite, not both NaN, unequal.
KGATE_JUDGE_FN bool nan_mismatch(double out, double target, bool both_finite) {
  return !both_finite && !(is_nan(out) && is_nan(target)) && out != target;
}

/// `inf` an infinity and `other` finite, at least `edge` large, of its sign.
KGATE_JUDGE_FN bool at_edge(double inf, double other, double edge) {
  return is_inf(inf) && finite(other) && abs(other) >= edge && sign(inf) == sign(other);
}

/// Element k of `job` into `s`.
KGATE_JUDGE_FN void accumulate(const OutputJob& job, int64_t k, OutputStats& s) {
  const double out = load(job.out, k), ref = load(job.expected, k);
  // Against the eager reference, under allclose (PendingComparison, Compare::allclose).
  bool fin = false;
  const double diff = finite_diff(out, ref, fin);
  s.ref_max_abs = maximum(s.ref_max_abs, diff);
  bool mismatch = nan_mismatch(out, ref, fin);
  if (mismatch && job.edge > 0)
    mismatch = !(at_edge(out, ref, job.edge) || at_edge(ref, out, job.edge));
  s.ref_nan_mismatches += mismatch ? 1 : 0;
  const double mag = abs(ref);
  s.ref_max_rel = maximum(s.ref_max_rel, fin && mag > 0 ? diff / mag : 0.0);
  const double allowed = (fin ? mag : 0.0) * job.rtol + job.atol;
  const double exact = diff > 0 ? infinity() : 0.0;
  const double ratio = fin ? (allowed > 0 ? diff / allowed : exact) : 0.0;
  s.ref_mismatches += ratio > 1.0 ? 1 : 0;
  if (takes(s.worst_ratio, s.worst_index, ratio, k)) {
    s.worst_ratio = ratio;
    s.worst_index = k;
  }
  for (int i = 0; i < job.sweeps; ++i)
    s.needed_atol[i] =
        maximum(s.needed_atol[i], fin ? clamp_min0(diff - mag * job.sweep_rtol[i]) : 0.0);
  const double oracle = load(job.oracle, k);
  if (job.with_oracle) {  // Compare::stats against the oracle, Compare::max_abs of eager's
    bool ofin = false;
    const double odiff = finite_diff(out, oracle, ofin);
    s.oracle_max_abs = maximum(s.oracle_max_abs, odiff);
    s.oracle_nan_mismatches += nan_mismatch(out, oracle, ofin) ? 1 : 0;
    const double omag = abs(oracle);
    s.oracle_max_rel = maximum(s.oracle_max_rel, ofin && omag > 0 ? odiff / omag : 0.0);
    bool rfin = false;
    s.reference_vs_oracle_max_abs =
        maximum(s.reference_vs_oracle_max_abs, finite_diff(ref, oracle, rfin));
  }
  if (job.relative) {
    const bool fin3 = finite(out) && finite(oracle) && finite(ref);
    const double err = fin3 ? abs(out - oracle) : 0.0;
    const double own = fin3 ? abs(ref - oracle) : 0.0;
    const double ax = abs(oracle);
    double scale = maximum(own, ax * job.eps);
    if (job.conditioned) {
      const double m = abs(load(job.magnitude, k));
      const double sum_scale = ((finite(m) ? m : 0.0) + ax * job.length) * job.eps_acc;
      scale = maximum(scale, fin3 ? sum_scale : 0.0);
    }
    const double rallowed = scale * job.ratio_k + job.atol;
    const double r = rallowed > 0 ? err / rallowed : (err > 0 ? infinity() : 0.0);
    s.relative_worst = maximum(s.relative_worst, r);
    s.relative_mismatches += r > 1.0 ? 1 : 0;
  }
  const bool need_bits = job.ulp || job.unwritten || job.fingerprint;
  if (!need_bits) return;
  const int size = size_of(job.out.type);
  const int64_t bits = load_bits(job.out, k);
  if (job.ulp) {
    const int64_t d =
        wrap_abs(wrap_sub(ordered(bits, size), ordered(load_bits(job.expected, k), size)));
    const int64_t v = fin ? d : 0;
    if (v > s.max_ulp) s.max_ulp = v;
  }
  if (job.unwritten) {
    bool held = bits == job.poison;
    if (held && job.poison_where_expected_differs) held = load_bits(job.expected, k) != job.poison;
    s.unwritten += held ? 1 : 0;
  }
  if (job.fingerprint) {
    const uint64_t weight =
        static_cast<uint64_t>(k) * 2654435761ULL + static_cast<uint64_t>(job.fingerprint_offset);
    s.fingerprint = static_cast<int64_t>(static_cast<uint64_t>(s.fingerprint) +
                                         static_cast<uint64_t>(bits) * weight);
  }
}

/// The figures of a job from its combined elements: the worst element's values, and zeros for
/// what the job did not measure (and for an empty output).
KGATE_JUDGE_FN OutputStats finish(const OutputJob& job, OutputStats s) {
  if (job.count == 0) {
    OutputStats zero;
    memset(&zero, 0, sizeof zero);
    return zero;
  }
  s.worst_out = load(job.out, s.worst_index);
  s.worst_target = load(job.expected, s.worst_index);
  for (int i = job.sweeps; i < kMaxSweep; ++i) s.needed_atol[i] = 0;
  if (!job.with_oracle) {
    s.oracle_max_abs = s.oracle_max_rel = s.reference_vs_oracle_max_abs = 0;
    s.oracle_nan_mismatches = 0;
  }
  if (!job.relative) s.relative_worst = 0;
  if (!job.ulp) s.max_ulp = 0;
  return s;
}

}  // namespace kgate::cuda::judge::math
