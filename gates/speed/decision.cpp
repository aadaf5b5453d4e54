// The statistical speed gate: sign-test / order-statistic bounds on the median block log ratio,
// the Hodges-Lehmann estimate, the Binomial(n, 1/2) tail they rest on, and multiplicity
// corrections.
#include "gates/speed/decision.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <sstream>

#include "core/error.hpp"

namespace kgate::speed {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kLnSqrt2Pi = 0.91893853320467274178;  // ln(sqrt(2 pi))
constexpr double kTwoPi = 6.28318530717958647693;

/// Stirling's error ln(n!) - ln(sqrt(2 pi n) (n/e)^n), accurate to double precision.
double stirling_error(double n) {
  if (n <= 15.0) {
    // Small n: direct; the cancellation costs at most ~1e-14 absolute, harmless in an exponent.
    return std::lgamma(n + 1.0) - (n + 0.5) * std::log(n) + n - kLnSqrt2Pi;
  }
  // Asymptotic series; five terms are exact to double precision for n > 15.
  const double s0 = 1.0 / 12, s1 = 1.0 / 360, s2 = 1.0 / 1260, s3 = 1.0 / 1680, s4 = 1.0 / 1188;
  const double nn = n * n;
  return (s0 - (s1 - (s2 - (s3 - s4 / nn) / nn) / nn) / nn) / n;
}

/// x ln(x / m) + m - x without the cancellation of the direct form when x is close to m.
double deviance_term(double x, double m) {
  if (std::fabs(x - m) < 0.1 * (x + m)) {
    const double v = (x - m) / (x + m);
    double sum = (x - m) * v;
    double ej = 2 * x * v;
    for (int j = 1; j < 1000; ++j) {
      ej *= v * v;
      const double next = sum + ej / (2 * j + 1);
      if (next == sum) return next;
      sum = next;
    }
    return sum;
  }
  return x * std::log(x / m) + m - x;
}

/// Binomial(n, 1/2) probability of exactly x, by the saddle-point form (relative error ~1e-15
/// for any n; plain lgamma differences lose ~1e-9 at n = 1e6).
double binomial_half_pmf(int64_t n, int64_t x) {
  if (x < 0 || x > n) return 0.0;
  if (x == 0 || x == n) return std::ldexp(1.0, static_cast<int>(-std::min<int64_t>(n, 2000)));
  const double dn = static_cast<double>(n), dx = static_cast<double>(x), dy = dn - dx;
  const double half = dn / 2;
  const double lc = stirling_error(dn) - stirling_error(dx) - stirling_error(dy) -
                    deviance_term(dx, half) - deviance_term(dy, half);
  return std::exp(lc) * std::sqrt(dn / (kTwoPi * dx * dy));
}

/// P(X >= k) for k > n / 2, where the terms decrease from the first: summed until negligible.
double upper_tail_beyond_mode(int64_t n, int64_t k) {
  double term = binomial_half_pmf(n, k);
  double sum = 0;
  for (int64_t i = k; i <= n && term > 0; ++i) {
    sum += term;
    if (term < sum * 1e-18) break;
    term *= static_cast<double>(n - i) / static_cast<double>(i + 1);
  }
  return std::min(sum, 1.0);
}

/// Ordered 64-bit key of a finite double: key(a) < key(b) iff a < b (with -0 just below +0).
int64_t order_key(double x) {
  int64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits >= 0 ? bits : std::numeric_limits<int64_t>::min() - bits;
}
double from_order_key(int64_t key) {
  const int64_t bits = key >= 0 ? key : std::numeric_limits<int64_t>::min() - key;
  double x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

/// Number of Walsh averages (pairs i <= j of the sorted sample) with value <= t, in O(n).
/// Uses the same arithmetic as the averages themselves, so the count is exact in floating point.
int64_t count_walsh_at_most(const std::vector<double>& sorted, double t) {
  const int64_t n = static_cast<int64_t>(sorted.size());
  int64_t count = 0;
  int64_t j = n - 1;  // largest j with avg(i, j) <= t; non-increasing as i grows
  for (int64_t i = 0; i < n; ++i) {
    while (j >= i && 0.5 * sorted[i] + 0.5 * sorted[j] > t) --j;
    if (j < i) break;
    count += j - i + 1;
  }
  return count;
}

/// The k-th smallest (1-based) Walsh average of a sorted sample: bisection over the ordered
/// doubles for the smallest t with count(<= t) >= k. At most 64 counting passes.
double kth_walsh_average(const std::vector<double>& sorted, int64_t k) {
  // The extreme averages, computed as the counting pass computes them, bracket all the others.
  const double smallest = 0.5 * sorted.front() + 0.5 * sorted.front();
  const double largest = 0.5 * sorted.back() + 0.5 * sorted.back();
  if (count_walsh_at_most(sorted, smallest) >= k) return smallest;
  int64_t lo = order_key(smallest);  // count(lo) < k
  int64_t hi = order_key(largest);   // count(hi) = all >= k
  // Unsigned span: the keys of two finite doubles can differ by more than INT64_MAX.
  while (static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) > 1) {
    const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    const int64_t mid = static_cast<int64_t>(static_cast<uint64_t>(lo) + span / 2);
    if (count_walsh_at_most(sorted, from_order_key(mid)) >= k) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return from_order_key(hi);
}

void require_finite(const std::vector<double>& d, const char* what) {
  for (size_t i = 0; i < d.size(); ++i) {
    if (!std::isfinite(d[i])) {
      std::ostringstream message;
      message << what << ": value " << i << " is not finite (" << d[i]
              << "); drop such blocks before deciding";
      throw Error(ErrorKind::internal, message.str());
    }
  }
}

/// Largest k in [0, n] with P(Binomial(n, 1/2) <= k - 1) <= alpha: d_(k) is then a one-sided
/// (1 - alpha) lower bound on the median. 0 means no order statistic achieves alpha.
int64_t order_statistic_rank(int64_t n, double alpha) {
  // P(X <= k - 1) = P(X >= n - k + 1) grows with k.
  auto tail = [n](int64_t k) { return binomial_half_upper_tail(n, n - k + 1); };
  if (n == 0 || tail(1) > alpha) return 0;
  int64_t lo = 1;      // tail(lo) <= alpha
  int64_t hi = n + 1;  // treated as > alpha (the whole sample: probability 1)
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (tail(mid) <= alpha) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace

const char* decision_name(Decision decision) {
  switch (decision) {
    case Decision::pass:
      return "pass";
    case Decision::regression:
      return "regression";
    case Decision::inconclusive:
      return "inconclusive";
  }
  return "unknown";
}

double log_threshold(double delta) {
  if (!(delta > -1.0) || !std::isfinite(delta)) {
    throw_usage("speed gate: the minimum effect delta must be a finite number > -1, got " +
                std::to_string(delta));
  }
  return std::log1p(delta);
}

double binomial_half_upper_tail(int64_t n, int64_t k) {
  if (n < 0) throw Error(ErrorKind::internal, "binomial_half_upper_tail: negative n");
  if (k <= 0) return 1.0;
  if (k > n) return 0.0;
  if (n <= 60) {
    // Exact integer sum of binomial coefficients (C(60, 30) * 30 < 2^64), rounded once.
    uint64_t coefficient = 1;  // C(n, i)
    uint64_t sum = 0;
    for (int64_t i = 0; i <= n; ++i) {
      if (i >= k) sum += coefficient;
      coefficient = coefficient * static_cast<uint64_t>(n - i) / static_cast<uint64_t>(i + 1);
    }
    return std::ldexp(static_cast<double>(sum), static_cast<int>(-n));
  }
  if (2 * k > n) return upper_tail_beyond_mode(n, k);
  // k at or below the mode: the complement P(X <= k - 1) = P(X >= n - k + 1) is the small side.
  return 1.0 - upper_tail_beyond_mode(n, n - k + 1);
}

double median(std::vector<double> x) {
  if (x.empty()) return 0.0;
  const size_t mid = x.size() / 2;
  std::nth_element(x.begin(), x.begin() + mid, x.end());
  const double upper = x[mid];
  if (x.size() % 2 == 1) return upper;
  const double lower = *std::max_element(x.begin(), x.begin() + mid);
  return 0.5 * lower + 0.5 * upper;
}

double hodges_lehmann(const std::vector<double>& d) {
  if (d.empty()) return 0.0;
  require_finite(d, "hodges_lehmann");
  std::vector<double> sorted = d;
  std::sort(sorted.begin(), sorted.end());
  const int64_t n = static_cast<int64_t>(sorted.size());
  const int64_t pairs = n * (n + 1) / 2;
  const double upper = kth_walsh_average(sorted, pairs / 2 + 1);
  if (pairs % 2 == 1) return upper;
  return 0.5 * kth_walsh_average(sorted, pairs / 2) + 0.5 * upper;
}

DecisionResult decide(std::vector<double> d, double delta, double alpha) {
  if (!(alpha > 0.0 && alpha < 0.5)) {
    throw_usage("speed gate: alpha must be in (0, 0.5), got " + std::to_string(alpha));
  }
  const double threshold = log_threshold(delta);
  require_finite(d, "speed decision");
  std::sort(d.begin(), d.end());

  DecisionResult result;
  result.n = static_cast<int64_t>(d.size());
  result.median = median(d);
  result.hodges_lehmann = hodges_lehmann(d);

  const int64_t k = order_statistic_rank(result.n, alpha);
  result.lower = k > 0 ? d[static_cast<size_t>(k - 1)] : -kInf;
  result.upper = k > 0 ? d[static_cast<size_t>(result.n - k)] : kInf;

  const auto above = std::count_if(d.begin(), d.end(), [&](double x) { return x > threshold; });
  const auto below = std::count_if(d.begin(), d.end(), [&](double x) { return x < threshold; });
  const int64_t untied = above + below;
  result.p_regression = binomial_half_upper_tail(untied, above);
  result.p_pass = binomial_half_upper_tail(untied, below);

  // alpha < 0.5 keeps lower <= upper, so at most one of these holds.
  if (result.lower > threshold) {
    result.decision = Decision::regression;
  } else if (result.upper < threshold) {
    result.decision = Decision::pass;
  } else {
    result.decision = Decision::inconclusive;
  }
  return result;
}

int64_t blocks_to_decide(const DecisionResult& d, double delta) {
  if (d.decision != Decision::inconclusive) return 0;
  if (d.n < 1 || !std::isfinite(d.lower) || !std::isfinite(d.upper)) return -1;
  const double distance = std::abs(d.hodges_lehmann - log_threshold(delta));
  const double half_width = 0.5 * (d.upper - d.lower);
  if (!(distance > 0) || !(half_width > 0)) return -1;
  const double need = static_cast<double>(d.n) * (half_width / distance) * (half_width / distance);
  if (!(need < 1e9)) return -1;
  return std::max<int64_t>(d.n + 1, static_cast<int64_t>(std::ceil(need)));
}

int min_blocks_to_decide(double alpha, int stages, int64_t comparisons) {
  if (!(alpha > 0.0 && alpha < 1.0) || stages < 1)
    throw Error(ErrorKind::internal, "min_blocks_to_decide: bad alpha or stages");
  const double need =
      std::min(alpha / stages, alpha / static_cast<double>(std::max<int64_t>(1, comparisons)));
  int n = 1;
  while (std::ldexp(1.0, -n) > need && n < 1000) ++n;
  return n;
}

double stage_alpha(double alpha, int stage, int stages) {
  if (stages < 1 || stage < 0 || stage >= stages) {
    throw Error(ErrorKind::internal, "stage_alpha: stage " + std::to_string(stage) +
                                         " is outside 0.." + std::to_string(stages - 1));
  }
  return alpha / stages;
}

namespace {

void require_probabilities(const std::vector<double>& p, const char* what) {
  for (double x : p) {
    if (!(x >= 0.0 && x <= 1.0)) {
      throw Error(ErrorKind::internal,
                  std::string(what) + ": p-value " + std::to_string(x) + " is not in [0, 1]");
    }
  }
}

/// Indices of p in ascending order of p (stable, so ties keep input order).
std::vector<size_t> ascending_order(const std::vector<double>& p) {
  std::vector<size_t> order(p.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  return order;
}

}  // namespace

std::vector<double> holm_adjust(const std::vector<double>& p) {
  require_probabilities(p, "holm_adjust");
  const size_t m = p.size();
  const std::vector<size_t> order = ascending_order(p);
  std::vector<double> adjusted(m);
  double running_max = 0;
  for (size_t rank = 0; rank < m; ++rank) {
    const double scaled = std::min(1.0, static_cast<double>(m - rank) * p[order[rank]]);
    running_max = std::max(running_max, scaled);
    adjusted[order[rank]] = running_max;
  }
  return adjusted;
}

std::vector<double> benjamini_hochberg_adjust(const std::vector<double>& p) {
  require_probabilities(p, "benjamini_hochberg_adjust");
  const size_t m = p.size();
  const std::vector<size_t> order = ascending_order(p);
  std::vector<double> adjusted(m);
  double running_min = 1.0;
  for (size_t rank = m; rank-- > 0;) {
    const double scaled = static_cast<double>(m) / static_cast<double>(rank + 1) * p[order[rank]];
    running_min = std::min(running_min, scaled);
    adjusted[order[rank]] = running_min;
  }
  return adjusted;
}

}  // namespace kgate::speed
