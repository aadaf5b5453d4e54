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

/// `v` with as many significant digits as it takes to read back: "%.Ng" with the smallest N in
/// 1..17 whose text strtod parses to `v` exactly (0.0025 -> "0.0025", 1e-05 -> "1e-05",
/// 0.1 -> "0.1"). For a setting (a tolerance, alpha, a threshold) that the user may type back.
/// Inf and NaN print as the C library prints them.
std::string format_exact(double v);

/// The fraction `fraction` as a percent that reads back: "%.Ng" of 100 x fraction with the smallest
/// N in 1..17 whose text, parsed and divided by 100, gives `fraction` again (exactly or within one
/// ulp), then "%": 0.0025 -> "0.25%", 0.02 -> "2%", 0.001234 -> "0.1234%". For a delta or alpha
/// printed as a percent. Inf and NaN print as the C library prints them, then "%".
std::string format_percent(double fraction);

}  // namespace kgate
