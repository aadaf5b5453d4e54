// Integer expressions of package manifests: grid, block, shared memory and workspace sizes written
// over shape symbols and attributes, e.g. "ceil_div(N, 256)" or "B * round_up(N, 32) * 4", and
// launch conditions such as "N > 1024 && N % 4 == 0".
// Parsed once into a tree (so a manifest can be checked before any shape is known), evaluated many
// times with 64-bit overflow checks. Every error is a kgate::Error of ErrorKind::package whose
// message quotes the expression and names the 1-based column.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace kgate::package {

/// Values of the symbols an expression may name (shape symbols and integer attributes).
using SymbolValues = std::map<std::string, int64_t, std::less<>>;

/// The functions expressions may call, each with two arguments.
const std::vector<std::string>& expr_function_names();

/// A parsed integer expression.
///
/// Grammar (C precedence, left-associative binary operators):
///   expr       := or ('?' expr ':' expr)?
///   or         := and ('||' and)*
///   and        := comparison ('&&' comparison)*
///   comparison := sum (('==' | '!=' | '<' | '<=' | '>' | '>=') sum)?
///   sum        := term (('+' | '-') term)*
///   term       := unary (('*' | '/' | '%') unary)*
///   unary      := '-' unary | '!' unary | primary
///   primary    := INTEGER | SYMBOL | FUNCTION '(' expr ',' expr ')' | '(' expr ')'
/// FUNCTION is one of ceil_div, min, max, round_up. '/' and '%' truncate toward zero as in C.
/// Comparisons and ! && || give 1 or 0 (any non-zero operand is true); && and || evaluate their
/// right side only when the left does not decide, and "c ? a : b" (right-associative) only the
/// side it picks. Comparisons do not chain ("a < b < c" is an error), which C would read as
/// "(a < b) < c".
class Expr {
 public:
  struct Node;

  /// The expression "0".
  Expr();

  /// Parses `text`; throws Error(package) "in \"TEXT\" at column C: what was expected".
  static Expr parse(const std::string& text);

  /// The text the expression was parsed from.
  const std::string& text() const { return text_; }

  /// The distinct symbols the expression names, in order of first appearance.
  std::vector<std::string> symbols() const;

  /// Throws Error(package) at the first symbol not in `known`, listing the known ones.
  void check_symbols(const std::set<std::string, std::less<>>& known) const;

  /// Evaluates with the given symbol values. Throws Error(package) on a symbol without a value,
  /// division or modulo by zero, and on any int64 overflow.
  int64_t evaluate(const SymbolValues& values) const;

  /// The constants `symbol` is compared with ("N <= 1024", "32 < N", "N == 16 * 64": 1024, 32,
  /// 1024), sorted and distinct: where a launch condition over that symbol switches.
  std::vector<int64_t> comparison_bounds(const std::string& symbol) const;

  /// The constant divisors of every quotient, remainder, ceil_div and round_up whose dividend
  /// names `symbol` ("(N + 255) / 256", "B * ceil_div(N, 1024)": 256, 1024), sorted and
  /// distinct: a grid written this way covers `symbol` in tiles of that size.
  std::vector<int64_t> divisors_of(const std::string& symbol) const;

  /// True when the expression names no symbol (its value is known without shapes).
  bool is_constant() const { return symbols().empty(); }

 private:
  Expr(std::string text, std::shared_ptr<const Node> root);

  std::string text_;
  std::shared_ptr<const Node> root_;
};

/// The names of `known` as messages list them: the device's properties (device_arch, device_sms,
/// ...) as one entry, "device_* (the device's properties)", last.
std::vector<std::string> listed_names(const std::set<std::string, std::less<>>& known);

/// Evaluates `text` once (parse + evaluate); convenience for tests and one-off values.
int64_t evaluate_expr(const std::string& text, const SymbolValues& values);

/// The values of a case's shape symbols (Case::dims), for evaluating expressions over them.
SymbolValues symbol_values(const std::vector<std::pair<std::string, int64_t>>& dims);

/// A name that expressions, manifests and op files accept: a letter or '_', then letters, digits
/// and '_', at most `max_len` characters.
bool is_identifier(const std::string& s, std::size_t max_len = 64);

}  // namespace kgate::package
