// Tests of the manifest expression evaluator: precedence, functions, C division semantics, symbol
// checks, and the exact messages of parse and evaluation errors (with columns).
#include "core/expr.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"

namespace kgate::package {
namespace {

int64_t eval(const std::string& text, const SymbolValues& values = {}) {
  return Expr::parse(text).evaluate(values);
}

/// The message of the Error(package) that parsing `text` throws.
std::string parse_error(const std::string& text) {
  try {
    Expr::parse(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::package);
    return e.what();
  }
  ADD_FAILURE() << "no error for \"" << text << "\"";
  return {};
}

/// The message of the Error(package) that evaluating `text` throws.
std::string eval_error(const std::string& text, const SymbolValues& values = {}) {
  const Expr e = Expr::parse(text);
  try {
    e.evaluate(values);
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::package);
    return err.what();
  }
  ADD_FAILURE() << "no error evaluating \"" << text << "\"";
  return {};
}

TEST(Expr, Literals) {
  EXPECT_EQ(eval("0"), 0);
  EXPECT_EQ(eval("42"), 42);
  EXPECT_EQ(eval("  7  "), 7);
  EXPECT_EQ(eval("9223372036854775807"), INT64_MAX);
}

TEST(Expr, Precedence) {
  EXPECT_EQ(eval("2 + 3 * 4"), 14);
  EXPECT_EQ(eval("(2 + 3) * 4"), 20);
  EXPECT_EQ(eval("2 * 3 + 4 * 5"), 26);
  EXPECT_EQ(eval("10 - 4 - 3"), 3);    // left-associative
  EXPECT_EQ(eval("100 / 10 / 5"), 2);  // left-associative
  EXPECT_EQ(eval("17 % 5 * 2"), 4);    // same level as *
  EXPECT_EQ(eval("1 + 17 % 5"), 3);
  EXPECT_EQ(eval("-3 * -2"), 6);
  EXPECT_EQ(eval("- -3"), 3);
  EXPECT_EQ(eval("-(2 + 3) * 4"), -20);
  EXPECT_EQ(eval("2 - -3"), 5);
  EXPECT_EQ(eval("((((1))))"), 1);
}

TEST(Expr, CDivisionSemantics) {
  EXPECT_EQ(eval("7 / 2"), 3);
  EXPECT_EQ(eval("7 % 3"), 1);
  EXPECT_EQ(eval("-7 / 2"), -3);  // truncates toward zero
  EXPECT_EQ(eval("-7 % 2"), -1);
  EXPECT_EQ(eval("7 % -2"), 1);
  EXPECT_EQ(eval("-9223372036854775807 - 1 % -1"), -INT64_MAX);
}

TEST(Expr, Functions) {
  EXPECT_EQ(eval("ceil_div(10, 3)"), 4);
  EXPECT_EQ(eval("ceil_div(9, 3)"), 3);
  EXPECT_EQ(eval("ceil_div(0, 5)"), 0);
  EXPECT_EQ(eval("ceil_div(1, 256)"), 1);
  EXPECT_EQ(eval("ceil_div(-7, 2)"), -3);
  EXPECT_EQ(eval("ceil_div(7, -2)"), -3);
  EXPECT_EQ(eval("ceil_div(-7, -2)"), 4);
  EXPECT_EQ(eval("round_up(10, 4)"), 12);
  EXPECT_EQ(eval("round_up(12, 4)"), 12);
  EXPECT_EQ(eval("min(3, -4)"), -4);
  EXPECT_EQ(eval("max(3, -4)"), 3);
  EXPECT_EQ(eval("max(min(5, 9), ceil_div(100, 7)) * 2"), 30);
}

TEST(Expr, ComparisonsGiveOneOrZero) {
  EXPECT_EQ(eval("3 == 3"), 1);
  EXPECT_EQ(eval("3 == 4"), 0);
  EXPECT_EQ(eval("3 != 4"), 1);
  EXPECT_EQ(eval("3 < 4"), 1);
  EXPECT_EQ(eval("4 < 4"), 0);
  EXPECT_EQ(eval("4 <= 4"), 1);
  EXPECT_EQ(eval("5 > 4"), 1);
  EXPECT_EQ(eval("4 >= 5"), 0);
  EXPECT_EQ(eval("-1 < 0"), 1);
  // Below + - * / %, above && and ||, as in C.
  EXPECT_EQ(eval("2 + 2 == 4"), 1);
  EXPECT_EQ(eval("10 % 4 == 2"), 1);
  EXPECT_EQ(eval("(3 > 2) * 7"), 7);
  EXPECT_EQ(eval("(3 > 2) + (5 > 4) + (1 > 9)"), 2);
}

TEST(Expr, LogicalOperators) {
  EXPECT_EQ(eval("1 && 1"), 1);
  EXPECT_EQ(eval("1 && 0"), 0);
  EXPECT_EQ(eval("0 || 0"), 0);
  EXPECT_EQ(eval("0 || 7"), 1);  // any non-zero is true; the result is 1
  EXPECT_EQ(eval("!0"), 1);
  EXPECT_EQ(eval("!5"), 0);
  EXPECT_EQ(eval("!!5"), 1);
  EXPECT_EQ(eval("-!0"), -1);
  // && binds tighter than ||.
  EXPECT_EQ(eval("1 || 0 && 0"), 1);
  EXPECT_EQ(eval("(1 || 0) && 0"), 0);
  const SymbolValues v{{"N", 700}, {"B", 3}};
  EXPECT_EQ(eval("N > 512 && N <= 1024", v), 1);
  EXPECT_EQ(eval("N > 32 && N <= 64 || B == 3", v), 1);
  EXPECT_EQ(eval("!(N % 4 == 0)", v), 0);
}

TEST(Expr, LogicalOperatorsShortCircuit) {
  // The right side is not evaluated when the left decides: no division by zero, no missing value.
  EXPECT_EQ(eval("D > 0 && N / D > 2", {{"N", 8}, {"D", 0}}), 0);
  EXPECT_EQ(eval("D == 0 || N / D > 2", {{"N", 8}, {"D", 0}}), 1);
  EXPECT_EQ(eval("0 && M", {}), 0);
  EXPECT_EQ(eval_error("1 && M"), "in \"1 && M\" at column 6: no value for symbol 'M'");
  EXPECT_EQ(eval_error("D >= 0 && N / D > 2", {{"N", 8}, {"D", 0}}),
            "in \"D >= 0 && N / D > 2\" at column 13: division by zero (D is 0)");
}

TEST(Expr, ConditionalOperator) {
  EXPECT_EQ(eval("1 ? 2 : 3"), 2);
  EXPECT_EQ(eval("0 ? 2 : 3"), 3);
  EXPECT_EQ(eval("N % 8 == 0 ? N / 8 : N", {{"N", 64}}), 8);
  EXPECT_EQ(eval("N % 8 == 0 ? N / 8 : N", {{"N", 63}}), 63);
  // Lowest precedence, right-associative: "a ? b : c ? d : e" is "a ? b : (c ? d : e)".
  EXPECT_EQ(eval("0 ? 1 : 0 ? 2 : 3"), 3);
  EXPECT_EQ(eval("1 || 0 ? 5 : 6"), 5);
  EXPECT_EQ(eval("(1 ? 4 : 5) * 2"), 8);
  EXPECT_EQ(eval("max(N > 4 ? N : 4, 2)", {{"N", 9}}), 9);
  // Only the picked side is evaluated: no division by zero, no missing symbol.
  EXPECT_EQ(eval("N == 0 ? 0 : 64 / N", {{"N", 0}}), 0);
  EXPECT_EQ(eval("1 ? 7 : unknown"), 7);
  EXPECT_EQ((std::vector<std::string>{"c", "a", "b"}), Expr::parse("c ? a : b").symbols());
  EXPECT_EQ((std::vector<int64_t>{16, 1024}),
            Expr::parse("N > 1024 ? 1 : N < 16").comparison_bounds("N"));
  EXPECT_EQ(
      parse_error("N ? 1"),
      "in \"N ? 1\" at column 6: expected ':' of the '?' at column 3, found end of expression");
  EXPECT_EQ(parse_error("N : 1"), "in \"N : 1\" at column 3: expected an operator, found ':'");
}

TEST(Expr, ComparisonBounds) {
  EXPECT_EQ(Expr::parse("N > 32 && N <= 64").comparison_bounds("N"),
            (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(Expr::parse("1024 < N").comparison_bounds("N"), (std::vector<int64_t>{1024}));
  EXPECT_EQ(Expr::parse("N <= 16 * 1024 || N == 7").comparison_bounds("N"),
            (std::vector<int64_t>{7, 16384}));
  EXPECT_EQ(Expr::parse("N > 1 && N > 1").comparison_bounds("N"), (std::vector<int64_t>{1}));
  // Only the symbol itself against a constant: not other symbols, expressions of N, non-constants.
  EXPECT_TRUE(Expr::parse("B > 4").comparison_bounds("N").empty());
  EXPECT_TRUE(Expr::parse("N % 4 == 0").comparison_bounds("N").empty());
  EXPECT_TRUE(Expr::parse("N < B").comparison_bounds("N").empty());
  EXPECT_TRUE(Expr::parse("N < 1 / 0").comparison_bounds("N").empty());
  EXPECT_TRUE(Expr::parse("ceil_div(N, 4)").comparison_bounds("N").empty());
  EXPECT_EQ(Expr::parse("min(N <= 8, 1)").comparison_bounds("N"), (std::vector<int64_t>{8}));
}

TEST(Expr, Symbols) {
  const SymbolValues v{{"B", 4}, {"N", 4097}, {"dim", -1}};
  EXPECT_EQ(eval("B * ceil_div(N, 1024)", v), 20);
  EXPECT_EQ(eval("round_up(N, 32) * 4", v), 16512);
  EXPECT_EQ(eval("N + dim", v), 4096);
  const Expr e = Expr::parse("B * N + ceil_div(N, B) - B");
  EXPECT_EQ(e.symbols(), (std::vector<std::string>{"B", "N"}));
  EXPECT_FALSE(e.is_constant());
  EXPECT_TRUE(Expr::parse("ceil_div(4096, 256)").is_constant());
  EXPECT_EQ(e.text(), "B * N + ceil_div(N, B) - B");
  EXPECT_NO_THROW(e.check_symbols({"B", "N"}));
  EXPECT_EQ(Expr().evaluate({}), 0);
  EXPECT_EQ(evaluate_expr("N - 1", v), 4096);
}

TEST(Expr, UnknownSymbolListsKnownOnes) {
  const Expr e = Expr::parse("B * ceil_div(M, 256)");
  try {
    e.check_symbols({"B", "N", "dim"});
    FAIL() << "no error";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::package);
    EXPECT_STREQ(err.what(),
                 "in \"B * ceil_div(M, 256)\" at column 14: unknown symbol 'M'; known symbols: "
                 "B, N, dim");
  }
  try {
    Expr::parse("K").check_symbols({});
    FAIL() << "no error";
  } catch (const Error& err) {
    EXPECT_STREQ(err.what(), "in \"K\" at column 1: unknown symbol 'K'; known symbols: (none)");
  }
}

TEST(Expr, ParseErrorsNameTheColumn) {
  EXPECT_EQ(parse_error(""),
            "in \"\" at column 1: expected a number, a symbol, a function call or '(', found end "
            "of expression");
  EXPECT_EQ(parse_error("2 +"),
            "in \"2 +\" at column 4: expected a number, a symbol, a function call or '(', found "
            "end of expression");
  EXPECT_EQ(parse_error("(1 + 2"),
            "in \"(1 + 2\" at column 7: expected ')' to close the '(' at column 1, found end of "
            "expression");
  EXPECT_EQ(parse_error("1 2"), "in \"1 2\" at column 3: expected an operator, found number 2");
  EXPECT_EQ(parse_error("N M"), "in \"N M\" at column 3: expected an operator, found name 'M'");
  EXPECT_EQ(parse_error("ceil_div(N, 256"),
            "in \"ceil_div(N, 256\" at column 16: expected ',' or ')' in the call of ceil_div, "
            "found end of expression");
  EXPECT_EQ(parse_error("ceil_div(N)"),
            "in \"ceil_div(N)\" at column 1: ceil_div takes 2 arguments, found 1");
  EXPECT_EQ(parse_error("min(1, 2, 3)"),
            "in \"min(1, 2, 3)\" at column 1: min takes 2 arguments, found 3");
  EXPECT_EQ(parse_error("B * ceildiv(N, 2)"),
            "in \"B * ceildiv(N, 2)\" at column 5: unknown function 'ceildiv'; expected one of "
            "ceil_div, max, min, round_up");
  EXPECT_EQ(parse_error("N ^ 2"),
            "in \"N ^ 2\" at column 3: unexpected character '^'; expected a number, a symbol, a "
            "function call, an operator (+ - * / % == != < <= > >= && || ! ?:) or parentheses");
  EXPECT_EQ(parse_error("N * 2.5"),
            "in \"N * 2.5\" at column 6: expected a decimal integer, found '.' in a number");
  EXPECT_EQ(parse_error("N = 2"),
            "in \"N = 2\" at column 3: '=' is not an operator; expected == to compare");
  EXPECT_EQ(parse_error("N > 2 & N < 9"),
            "in \"N > 2 & N < 9\" at column 7: '&' is not an operator; expected && (logical and)");
  EXPECT_EQ(parse_error("N | 1"),
            "in \"N | 1\" at column 3: '|' is not an operator; expected || (logical or)");
  EXPECT_EQ(parse_error("1 < N < 9"),
            "in \"1 < N < 9\" at column 7: comparisons do not chain; write \"a < b && b < c\" "
            "instead of \"a < b < c\"");
  EXPECT_EQ(parse_error("N >"),
            "in \"N >\" at column 4: expected a number, a symbol, a function call or '(', found "
            "end of expression");
  EXPECT_EQ(parse_error("9223372036854775808"),
            "in \"9223372036854775808\" at column 1: the number 9223372036854775808 does not fit "
            "in a signed 64-bit integer");
  EXPECT_EQ(parse_error("2 * )"),
            "in \"2 * )\" at column 5: expected a number, a symbol, a function call or '(', found "
            "')'");
}

TEST(Expr, NestingAndLengthAreBounded) {
  const std::string deep = std::string(100, '(') + "1" + std::string(100, ')');
  EXPECT_NE(parse_error(deep).find("nested deeper than 64 levels"), std::string::npos);
  EXPECT_NE(parse_error(std::string(200, '-') + "1").find("nested deeper than 64 levels"),
            std::string::npos);
  std::string longest = "1";
  while (longest.size() < 1030) longest += " + 1";
  EXPECT_NE(parse_error(longest).find("at column 1: an expression may have at most 1024 "
                                      "characters, found 1033"),
            std::string::npos);
  EXPECT_EQ(eval(std::string(60, '(') + "1" + std::string(60, ')')), 1);
}

TEST(Expr, DivisionByZero) {
  EXPECT_EQ(eval_error("N / D", {{"N", 8}, {"D", 0}}),
            "in \"N / D\" at column 3: division by zero (D is 0)");
  EXPECT_EQ(eval_error("5 % (2 - 2)"), "in \"5 % (2 - 2)\" at column 3: modulo by zero");
  EXPECT_EQ(eval_error("ceil_div(N, 0)", {{"N", 1}}),
            "in \"ceil_div(N, 0)\" at column 1: ceil_div division by zero");
  EXPECT_EQ(eval_error("1 + round_up(N, W)", {{"N", 1}, {"W", 0}}),
            "in \"1 + round_up(N, W)\" at column 5: round_up division by zero (W is 0)");
}

TEST(Expr, Overflow) {
  EXPECT_EQ(eval_error("9223372036854775807 + 1"),
            "in \"9223372036854775807 + 1\" at column 21: 64-bit integer overflow in "
            "9223372036854775807 + 1");
  EXPECT_EQ(eval_error("N * N", {{"N", int64_t{1} << 32}}),
            "in \"N * N\" at column 3: 64-bit integer overflow in 4294967296 * 4294967296");
  EXPECT_EQ(eval_error("-9223372036854775807 - 2"),
            "in \"-9223372036854775807 - 2\" at column 22: 64-bit integer overflow in "
            "-9223372036854775807 - 2");
  EXPECT_EQ(eval_error("-(-9223372036854775807 - 1)"),
            "in \"-(-9223372036854775807 - 1)\" at column 1: 64-bit integer overflow in "
            "-(-9223372036854775808)");
  EXPECT_EQ(eval_error("(-9223372036854775807 - 1) / -1"),
            "in \"(-9223372036854775807 - 1) / -1\" at column 28: 64-bit integer overflow in "
            "-9223372036854775808 / -1");
  EXPECT_EQ(eval_error("round_up(9223372036854775807, 2)"),
            "in \"round_up(9223372036854775807, 2)\" at column 1: 64-bit integer overflow in "
            "round_up(9223372036854775807, 2)");
}

TEST(Expr, MissingValue) {
  EXPECT_EQ(eval_error("B * N", {{"B", 2}}), "in \"B * N\" at column 5: no value for symbol 'N'");
}

}  // namespace
}  // namespace kgate::package
