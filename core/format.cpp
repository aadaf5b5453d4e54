#include "core/format.hpp"

#include <cmath>
#include <cstdio>

namespace kgate {

std::string format_number(double v, const char* spec) {
  char buf[96];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

std::string format_number_or_dash(double v, const char* spec) {
  return std::isfinite(v) ? format_number(v, spec) : "-";
}

}  // namespace kgate
