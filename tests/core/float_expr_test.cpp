// Float expressions of package manifests (core/float_expr): values in float64, C precedence, the
// four functions, and errors that quote the expression and name the column.
#include "core/float_expr.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"

namespace kgate::package {
namespace {

double value(const std::string& text, const FloatValues& values = {}) {
  return FloatExpr::parse(text).evaluate(values);
}

std::string error_of(const std::string& text) {
  try {
    FloatExpr::parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(FloatExpr, ValuesInFloat64WithCPrecedence) {
  EXPECT_DOUBLE_EQ(value("1 / sqrt(D)", {{"D", 64}}), 0.125);
  EXPECT_DOUBLE_EQ(value("rsqrt(D) * scale", {{"D", 16}, {"scale", 2.0}}), 0.5);
  EXPECT_DOUBLE_EQ(value("1 + 2 * 3 - 4 / 8"), 6.5);
  EXPECT_DOUBLE_EQ(value("-(1 + 2) * -2"), 6);
  EXPECT_DOUBLE_EQ(value("min(N, 4.5) + max(-1, eps)", {{"N", 3}, {"eps", 1e-5}}), 3.00001);
  EXPECT_DOUBLE_EQ(value("2.5e-1 + .5 + 3."), 3.75);
  EXPECT_DOUBLE_EQ(value("7 / 2"), 3.5);  // float division, not C's integer one
  // One rounding, at the end: 1/sqrt(3) in float64, then (by the packer) to f32.
  EXPECT_EQ(static_cast<float>(value("1 / sqrt(N)", {{"N", 3}})),
            static_cast<float>(1 / std::sqrt(3.0)));
  EXPECT_TRUE(std::isinf(value("1 / 0")));
  EXPECT_TRUE(std::isnan(value("sqrt(-1)")));
}

TEST(FloatExpr, NamesAreCheckedAndValued) {
  const auto e = FloatExpr::parse("rsqrt(D) * scale + D");
  EXPECT_EQ(e.symbols(), (std::vector<std::string>{"D", "scale"}));
  EXPECT_NO_THROW(e.check_symbols({"D", "scale", "N"}));
  try {
    e.check_symbols({"D", "N"});
    ADD_FAILURE() << "an unknown name was accepted";
  } catch (const Error& x) {
    EXPECT_EQ(std::string(x.what()),
              "in \"rsqrt(D) * scale + D\" at column 12: unknown name 'scale'; expected a shape "
              "symbol or an attribute (D, N)");
  }
  try {
    e.evaluate({{"D", 4}});
    ADD_FAILURE() << "a name without a value was evaluated";
  } catch (const Error& x) {
    EXPECT_NE(std::string(x.what()).find("'scale' has no value"), std::string::npos) << x.what();
  }
}

TEST(FloatExpr, ErrorsQuoteTheExpressionAndNameTheColumn) {
  EXPECT_EQ(
      error_of("1 / sqr(D)"),
      "in \"1 / sqr(D)\" at column 5: unknown function 'sqr'; expected sqrt, rsqrt, min, max");
  EXPECT_EQ(error_of("min(D)"), "in \"min(D)\" at column 1: min takes 2 arguments, found 1");
  EXPECT_EQ(error_of("sqrt(D, 2)"),
            "in \"sqrt(D, 2)\" at column 1: sqrt takes 1 argument, found 2");
  EXPECT_EQ(error_of("(1 + D"),
            "in \"(1 + D\" at column 7: expected ')' to close the '(' at column 1, found the end "
            "of the expression");
  EXPECT_EQ(error_of("D % 2"),
            "in \"D % 2\" at column 3: '%' is not a float operation; an integer argument is "
            "{\"shape\": ...}");
  EXPECT_EQ(error_of("2D"), "in \"2D\" at column 2: unexpected 'D' after the number");
  EXPECT_EQ(error_of("1 +"),
            "in \"1 +\" at column 4: expected a number, a name, a function or '(', found the end "
            "of the expression");
  EXPECT_EQ(error_of("D D"), "in \"D D\" at column 3: unexpected 'D'");
  EXPECT_NE(error_of(std::string(100, '(') + "1" + std::string(100, ')'))
                .find("nested more than 64 levels deep"),
            std::string::npos);
}

}  // namespace
}  // namespace kgate::package
