// Numbers as text: the one formatter of kgate's messages and reports.
#pragma once

#include <string>

namespace kgate {

/// `v` under a printf spec with one floating conversion ("%.3g" by default; "%.3f",
/// " (margin %.3f)", ...). Inf and NaN print as the C library prints them.
std::string format_number(double v, const char* spec = "%.3g");

/// The same, with "-" for Inf and NaN (a page or table cell where printf's "inf", "nan" or "-nan"
/// would depend on the C library).
std::string format_number_or_dash(double v, const char* spec = "%.3g");

}  // namespace kgate
