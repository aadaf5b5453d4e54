// Calibration statistics: binomial intervals (Wilson, Clopper-Pearson), percentiles, the per-launch
// coefficient of variation, block log ratios from raw samples, and the A/A summary.
#include "gates/speed/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>

#include "core/error.hpp"

namespace kgate::speed {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

/// P(Z <= x), accurate in the lower tail (erfc keeps its relative precision there).
double normal_cdf(double x) { return 0.5 * std::erfc(-x * kInvSqrt2); }

/// sum_{j=from}^{to} C(n, j) p^j (1 - p)^(n - j), for 0 < p < 1 and 0 <= from <= to <= n.
double binomial_range(int64_t n, int64_t from, int64_t to, double p) {
  const double dn = static_cast<double>(n);
  const double log_p = std::log(p), log_q = std::log1p(-p);
  const double lg_n = std::lgamma(dn + 1);
  double sum = 0;
  for (int64_t j = from; j <= to; ++j) {
    const double dj = static_cast<double>(j);
    sum += std::exp(lg_n - std::lgamma(dj + 1) - std::lgamma(dn - dj + 1) + dj * log_p +
                    (dn - dj) * log_q);
  }
  return std::min(sum, 1.0);
}

/// The p in [0, 1] where increasing `f` crosses `target`, by bisection to the last bit.
template <typename F>
double solve_increasing(F f, double target) {
  double lo = 0, hi = 1;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (mid <= lo || mid >= hi) break;
    (f(mid) < target ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

void check_proportion(int64_t successes, int64_t trials, double confidence, const char* what) {
  if (trials < 1 || successes < 0 || successes > trials) {
    throw_usage(std::string(what) + ": need 0 <= successes <= trials and trials >= 1 (got " +
                std::to_string(successes) + " of " + std::to_string(trials) + ")");
  }
  if (!(confidence > 0 && confidence < 1)) {
    throw_usage(std::string(what) + ": confidence must be in (0, 1), got " +
                std::to_string(confidence));
  }
}

}  // namespace

double normal_quantile(double p) {
  if (!(p > 0 && p < 1))
    throw_usage("normal_quantile: p must be in (0, 1), got " + std::to_string(p));
  if (p > 0.5) return -normal_quantile(1 - p);
  // The lower half: the quantile lies in [-40, 0] (Phi(-40) is far below the smallest double).
  double lo = -40, hi = 0;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (mid <= lo || mid >= hi) break;
    (normal_cdf(mid) < p ? lo : hi) = mid;
  }
  double x = 0.5 * (lo + hi);
  const double density = kInvSqrt2Pi * std::exp(-0.5 * x * x);
  if (density > 0) x -= (normal_cdf(x) - p) / density;
  return x;
}

double binomial_upper_tail(int64_t n, int64_t k, double p) {
  if (n < 0) throw_usage("binomial_upper_tail: n must be >= 0, got " + std::to_string(n));
  if (!(p >= 0 && p <= 1)) throw_usage("binomial_upper_tail: p must be in [0, 1]");
  if (k <= 0) return 1;
  if (k > n) return 0;
  if (p == 0) return 0;
  if (p == 1) return 1;
  return binomial_range(n, k, n, p);
}

ProportionInterval wilson_interval(int64_t successes, int64_t trials, double confidence) {
  check_proportion(successes, trials, confidence, "wilson_interval");
  const double z = normal_quantile(0.5 + confidence / 2);
  const double n = static_cast<double>(trials);
  const double phat = static_cast<double>(successes) / n;
  const double z2 = z * z;
  const double denominator = 1 + z2 / n;
  const double center = (phat + z2 / (2 * n)) / denominator;
  const double half = z / denominator * std::sqrt(phat * (1 - phat) / n + z2 / (4 * n * n));
  ProportionInterval interval;
  interval.lower = successes == 0 ? 0.0 : std::max(0.0, center - half);
  interval.upper = successes == trials ? 1.0 : std::min(1.0, center + half);
  return interval;
}

ProportionInterval clopper_pearson_interval(int64_t successes, int64_t trials, double confidence) {
  check_proportion(successes, trials, confidence, "clopper_pearson_interval");
  const double tail = (1 - confidence) / 2;
  ProportionInterval interval;
  if (successes > 0) {
    // Lowest p at which seeing this many or more is still not too unlikely: P(X >= x; p) = tail.
    interval.lower =
        solve_increasing([&](double p) { return binomial_upper_tail(trials, successes, p); }, tail);
  }
  if (successes < trials) {
    // Highest p at which seeing this many or fewer is still not too unlikely: P(X <= x; p) = tail,
    // written as the increasing function 1 - P(X <= x; p) so one solver serves both ends.
    interval.upper = solve_increasing(
        [&](double p) {
          if (p <= 0) return 0.0;
          if (p >= 1) return 1.0;
          return 1 - binomial_range(trials, 0, successes, p);
        },
        1 - tail);
  }
  return interval;
}

double percentile(std::vector<double> x, double q) {
  if (!(q >= 0 && q <= 1)) throw_usage("percentile: q must be in [0, 1], got " + std::to_string(q));
  if (x.empty()) return kNaN;
  for (double v : x) {
    if (std::isnan(v)) throw Error(ErrorKind::internal, "percentile: the sample holds a NaN");
  }
  std::sort(x.begin(), x.end());
  const double h = static_cast<double>(x.size() - 1) * q;
  const size_t lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= x.size()) return x.back();
  const double fraction = h - static_cast<double>(lo);
  const double a = x[lo], b = x[lo + 1];
  if (fraction == 0 || a == b) return a;
  // An infinite end dominates any interpolation that touches it (and avoids inf - inf).
  if (std::isinf(a)) return a;
  if (std::isinf(b)) return b;
  return a + fraction * (b - a);
}

double coefficient_of_variation(const std::vector<double>& x) {
  if (x.size() < 2) return 0;
  double mean = 0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(x.size());
  if (mean == 0) return kNaN;
  double squares = 0;
  for (double v : x) squares += (v - mean) * (v - mean);
  return std::sqrt(squares / static_cast<double>(x.size() - 1)) / std::fabs(mean);
}

std::vector<double> block_log_ratios(const std::vector<double>& a, const std::vector<double>& b,
                                     size_t per_block) {
  if (per_block == 0 || a.size() != b.size() || a.size() % per_block != 0) {
    throw Error(ErrorKind::internal, "block_log_ratios: " + std::to_string(a.size()) +
                                         " baseline and " + std::to_string(b.size()) +
                                         " candidate samples do not form whole blocks of " +
                                         std::to_string(per_block));
  }
  std::vector<double> d;
  d.reserve(a.size() / per_block);
  for (size_t start = 0; start < a.size(); start += per_block) {
    const auto first = static_cast<std::ptrdiff_t>(start);
    const auto last = static_cast<std::ptrdiff_t>(start + per_block);
    const double ma = median(std::vector<double>(a.begin() + first, a.begin() + last));
    const double mb = median(std::vector<double>(b.begin() + first, b.begin() + last));
    if (!(ma > 0) || !(mb > 0)) {
      throw Error(ErrorKind::internal, "block_log_ratios: a block median is not positive");
    }
    d.push_back(std::log(mb / ma));
  }
  return d;
}

AaSummary summarize_aa(const std::vector<AaComparison>& comparisons, double confidence,
                       double quantile) {
  if (!(confidence > 0 && confidence < 1))
    throw_usage("summarize_aa: confidence must be in (0, 1)");
  if (!(quantile > 0 && quantile < 1)) throw_usage("summarize_aa: quantile must be in (0, 1)");
  AaSummary s;
  s.confidence = confidence;
  s.quantile = quantile;
  s.comparisons = static_cast<int64_t>(comparisons.size());
  std::vector<double> magnitudes, half_widths, cvs;
  for (const AaComparison& c : comparisons) {
    if (c.invalid) {
      ++s.invalid;
      continue;
    }
    ++s.valid;
    switch (c.decision) {
      case Decision::regression:
        ++s.regressions;
        break;
      case Decision::pass:
        ++s.passes;
        break;
      case Decision::inconclusive:
        ++s.inconclusive;
        break;
    }
    magnitudes.push_back(std::fabs(c.log_ratio));
    half_widths.push_back(std::isnan(c.log_upper) ? std::numeric_limits<double>::infinity()
                                                  : c.log_upper - c.log_ratio);
    if (std::isfinite(c.cv)) cvs.push_back(c.cv);
  }
  if (s.valid == 0) {
    s.false_positive_rate = s.noise_floor = s.delta_min = s.median_cv = kNaN;
    return s;
  }
  s.false_positive_rate = static_cast<double>(s.regressions) / static_cast<double>(s.valid);
  s.fp_exact = clopper_pearson_interval(s.regressions, s.valid, confidence);
  s.fp_wilson = wilson_interval(s.regressions, s.valid, confidence);
  s.noise_floor = std::expm1(percentile(magnitudes, quantile));
  s.delta_min = std::expm1(percentile(half_widths, quantile));
  s.median_cv = percentile(cvs, 0.5);
  return s;
}

}  // namespace kgate::speed
