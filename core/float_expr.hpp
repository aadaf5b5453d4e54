// Floating-point expressions of package manifests: a kernel argument computed from the call, such
// as an attention kernel's softmax scale {"scalar": "1 / sqrt(D)", "type": "f32"} or
// "rsqrt(D) * scale". Evaluated in float64 over the shape symbols and the attributes, and rounded
// once, to the argument's type, by whoever packs it.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace kgate::package {

/// Values of the names a float expression may use (shape symbols and attributes, integer or not).
using FloatValues = std::map<std::string, double, std::less<>>;

/// A parsed float expression.
///
/// Grammar (C precedence, left-associative):
///   sum     := term (('+' | '-') term)*
///   term    := unary (('*' | '/') unary)*
///   unary   := ('-' | '+') unary | primary
///   primary := NUMBER | NAME | FUNCTION '(' sum (',' sum)* ')' | '(' sum ')'
/// NUMBER is a decimal with an optional fraction and exponent (0.5, 1e-3, 2.); FUNCTION is sqrt or
/// rsqrt (one argument), min or max (two). IEEE arithmetic: 1 / 0 is inf and sqrt(-1) is NaN.
class FloatExpr {
 public:
  struct Node;
  /// The expression "0".
  FloatExpr();
  /// Parses `text`; throws Error(package) "in \"TEXT\" at column C: what was expected".
  static FloatExpr parse(const std::string& text);
  const std::string& text() const { return text_; }
  /// The distinct names the expression uses, in order of first appearance.
  std::vector<std::string> symbols() const;
  /// Throws Error(package) at the first name not in `known`, listing the known ones.
  void check_symbols(const std::set<std::string, std::less<>>& known) const;
  /// Evaluates in float64; throws Error(package) on a name without a value.
  double evaluate(const FloatValues& values) const;

 private:
  FloatExpr(std::string text, std::shared_ptr<const Node> root);
  std::string text_;
  std::shared_ptr<const Node> root_;
};

/// The functions float expressions may call.
const std::vector<std::string>& float_expr_function_names();

}  // namespace kgate::package
