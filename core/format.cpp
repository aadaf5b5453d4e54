#include "core/format.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kgate {

std::string format_number(double v, const char* spec) {
  char buf[96];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

std::string format_number_or_dash(double v, const char* spec) {
  return std::isfinite(v) ? format_number(v, spec) : "-";
}

namespace {

// "%.Ng" of `v` with the smallest N in 1..17 for which `reads_back(text)`; %.17g otherwise (it
// always reads back a double exactly). A text "2.5e+02" that more digits would print plainly
// ("250") is passed over for the plain one.
template <typename ReadsBack>
std::string shortest_g(double v, ReadsBack reads_back) {
  char buf[64];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    const char* exponent = std::strstr(buf, "e+");
    if (exponent && digits < 17 && std::atoi(exponent + 2) < 17) continue;
    if (reads_back(buf)) return buf;
  }
  return buf;
}

}  // namespace

std::string format_exact(double v) {
  if (!std::isfinite(v)) return format_number(v, "%g");
  return shortest_g(v, [v](const char* text) { return std::strtod(text, nullptr) == v; });
}

std::string format_percent(double fraction) {
  if (!std::isfinite(fraction)) return format_number(100 * fraction, "%g") + "%";
  // 100 x fraction and the division back each round once: a text within one ulp reads back.
  const auto within_one_ulp = [fraction](double back) {
    return back == fraction || std::nextafter(back, fraction) == fraction;
  };
  return shortest_g(
             100 * fraction,
             [&](const char* text) { return within_one_ulp(std::strtod(text, nullptr) / 100); }) +
         "%";
}

}  // namespace kgate
