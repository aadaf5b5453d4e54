// Numbers as text (core/format.hpp): settings print so that they read back.
#include "core/format.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>

namespace kgate {
namespace {

// The percent text, parsed and divided by 100: the fraction it says.
double percent_value(const std::string& text) {
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '%') << text;
  return std::strtod(text.substr(0, text.size() - 1).c_str(), nullptr) / 100;
}

bool within_one_ulp(double a, double b) { return a == b || std::nextafter(a, b) == b; }

TEST(Format, PercentKnownAnswers) {
  EXPECT_EQ(format_percent(0.0025), "0.25%");
  EXPECT_EQ(format_percent(0.02), "2%");
  EXPECT_EQ(format_percent(0.001234), "0.1234%");
  EXPECT_EQ(format_percent(0.05), "5%");
  EXPECT_EQ(format_percent(0.1), "10%");
  EXPECT_EQ(format_percent(0.5), "50%");
  EXPECT_EQ(format_percent(1), "100%");
  EXPECT_EQ(format_percent(2.5), "250%");
  EXPECT_EQ(format_percent(0), "0%");
  EXPECT_EQ(format_percent(0.123456789), "12.3456789%");
  EXPECT_EQ(format_percent(1e-9), "1e-07%");
  EXPECT_EQ(format_percent(-0.03), "-3%");
  EXPECT_EQ(format_percent(1.0 / 3), "33.33333333333333%");
  EXPECT_EQ(format_percent(1e18), "1e+20%");  // past what 17 digits print plainly
}

TEST(Format, PercentNonFinite) {
  EXPECT_EQ(format_percent(std::numeric_limits<double>::infinity()), "inf%");
  EXPECT_EQ(format_percent(-std::numeric_limits<double>::infinity()), "-inf%");
}

TEST(Format, ExactKnownAnswers) {
  EXPECT_EQ(format_exact(0.0025), "0.0025");
  EXPECT_EQ(format_exact(0.05), "0.05");
  EXPECT_EQ(format_exact(1e-5), "1e-05");
  EXPECT_EQ(format_exact(1.2345e-5), "1.2345e-05");
  EXPECT_EQ(format_exact(0.1), "0.1");
  EXPECT_EQ(format_exact(3), "3");
  EXPECT_EQ(format_exact(0), "0");
  EXPECT_EQ(format_exact(0.8), "0.8");
  EXPECT_EQ(format_exact(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(format_exact(250), "250");  // not 2.5e+02
  EXPECT_EQ(format_exact(1e5), "100000");
  EXPECT_EQ(format_exact(1e30), "1e+30");
  EXPECT_EQ(format_exact(std::numeric_limits<double>::infinity()), "inf");
}

// Any double reads back (exact: exactly; percent: within one ulp), with no digit to spare.
TEST(Format, ReadsBackWithTheFewestDigits) {
  std::mt19937_64 rng(48);
  std::uniform_real_distribution<double> exponent(-12, 3);
  std::uniform_real_distribution<double> mantissa(1, 10);
  for (int i = 0; i < 20000; ++i) {
    // Short decimals (as a user types them) and full-precision doubles, alternately.
    double v = mantissa(rng) * std::pow(10, std::floor(exponent(rng)));
    if (i % 2 == 0) v = std::strtod(format_number(v, "%.3g").c_str(), nullptr);
    const std::string exact = format_exact(v);
    EXPECT_EQ(std::strtod(exact.c_str(), nullptr), v) << exact;
    const std::string percent = format_percent(v);
    EXPECT_TRUE(within_one_ulp(percent_value(percent), v)) << percent << " for " << format_exact(v);
    // No shorter text would do (but "2.5e+02", which the plain "250" replaces).
    char shorter[64];
    for (int digits = 1; digits <= 16; ++digits) {
      std::snprintf(shorter, sizeof shorter, "%.*g", digits, v);
      if (shorter == exact) break;
      if (std::strstr(shorter, "e+")) continue;
      EXPECT_NE(std::strtod(shorter, nullptr), v) << shorter << " reads back too, before " << exact;
    }
    if (i % 2 == 0) EXPECT_LE(percent.size(), 6u + 5u) << percent;  // 3 digits, and an exponent
  }
}

}  // namespace
}  // namespace kgate
