// One row of softmax_cpu (kernels/softmax/softmax_cpu.cpp), for cpu mutants whose values are right
// and whose bug is elsewhere (where they store them).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace kgate::mutants {

/// Softmax of the row xr[0], xr[xs], ..., xr[(n-1)*xs]; store(c, value) writes element c.
template <typename Store>
void softmax_cpu_row(const float* xr, int64_t xs, int64_t n, Store store) {
  float m = -std::numeric_limits<float>::infinity();
  bool nan = false;
  for (int64_t c = 0; c < n; ++c) {
    nan |= std::isnan(xr[c * xs]);
    m = std::fmax(m, xr[c * xs]);
  }
  double s = 0;
  for (int64_t c = 0; c < n; ++c) s += std::exp(static_cast<double>(xr[c * xs]) - m);
  if (nan) s = std::numeric_limits<double>::quiet_NaN();
  for (int64_t c = 0; c < n; ++c)
    store(c, static_cast<float>(std::exp(static_cast<double>(xr[c * xs]) - m) / s));
}

}  // namespace kgate::mutants
