// Recursive-descent parser and checked evaluator of manifest integer expressions.
#include "core/expr.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>
#include <utility>

#include "core/error.hpp"
#include "core/safe_text.hpp"

namespace kgate::package {

namespace {

constexpr std::size_t kMaxExprLength = 1024;
constexpr int kMaxDepth = 64;

enum class Op {
  literal,
  symbol,
  neg,
  add,
  sub,
  mul,
  div,
  mod,
  ceil_div,
  min,
  max,
  round_up,
  eq,
  ne,
  lt,
  le,
  gt,
  ge,  // comparisons: 1 or 0
  logical_not,
  logical_and,
  logical_or,
  conditional  // c ? a : b: `cond` is c, lhs a, rhs b
};

bool is_comparison(Op op) {
  return op == Op::eq || op == Op::ne || op == Op::lt || op == Op::le || op == Op::gt ||
         op == Op::ge;
}

}  // namespace

struct Expr::Node {
  Op op = Op::literal;
  int64_t value = 0;       // literal
  std::string name;        // symbol or function name
  std::size_t column = 1;  // 1-based column of the literal, symbol, operator or function name
  std::shared_ptr<const Node> lhs;
  std::shared_ptr<const Node> rhs;
  std::shared_ptr<const Node> cond;  // conditional: the condition
};

namespace {

using NodePtr = std::shared_ptr<const Expr::Node>;

[[noreturn]] void fail(const std::string& text, std::size_t column, const std::string& what) {
  throw Error(ErrorKind::package,
              "in \"" + text + "\" at column " + std::to_string(column) + ": " + what);
}

// A message's list of names, "(none)" when empty.
std::string listed(const std::vector<std::string>& names) {
  return names.empty() ? "(none)" : join(names);
}

struct Token {
  enum Kind { end, integer, ident, punct } kind = end;
  std::string text;
  std::size_t column = 1;
};

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) { advance(); }

  NodePtr parse() {
    NodePtr root = expression(0);
    if (tok_.kind != Token::end) fail(text_, tok_.column, "expected an operator, found " + found());
    return root;
  }

 private:
  std::string found() const {
    switch (tok_.kind) {
      case Token::end:
        return "end of expression";
      case Token::integer:
        return "number " + tok_.text;
      case Token::ident:
        return "name '" + tok_.text + "'";
      case Token::punct:
        return "'" + tok_.text + "'";
    }
    return "?";
  }

  bool is(const char* punct) const { return tok_.kind == Token::punct && tok_.text == punct; }

  void advance() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    tok_ = Token{};
    tok_.column = pos_ + 1;
    if (pos_ >= text_.size()) return;
    const char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      const std::size_t start = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      if (pos_ < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[pos_])) ||
                                  text_[pos_] == '_' || text_[pos_] == '.'))
        fail(text_, pos_ + 1,
             "expected a decimal integer, found '" + std::string(1, text_[pos_]) + "' in a number");
      tok_.kind = Token::integer;
      tok_.text = text_.substr(start, pos_ - start);
      return;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t start = pos_;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
        ++pos_;
      tok_.kind = Token::ident;
      tok_.text = text_.substr(start, pos_ - start);
      return;
    }
    const char next = pos_ + 1 < text_.size() ? text_[pos_ + 1] : '\0';
    static const std::vector<std::string> pairs = {"==", "!=", "<=", ">=", "&&", "||"};
    for (const auto& p : pairs) {
      if (c == p[0] && next == p[1]) {
        tok_.kind = Token::punct;
        tok_.text = p;
        pos_ += 2;
        return;
      }
    }
    // A single '=', '&' or '|' is almost always a misspelt comparison or logical operator.
    if (c == '=' || c == '&' || c == '|')
      fail(text_, pos_ + 1,
           "'" + std::string(1, c) + "' is not an operator; expected " +
               (c == '='   ? "== to compare"
                : c == '&' ? "&& (logical and)"
                           : "|| (logical or)"));
    static const std::string punct = "+-*/%(),<>!?:";
    if (punct.find(c) == std::string::npos)
      fail(text_, pos_ + 1,
           "unexpected character '" + std::string(1, c) +
               "'; expected a number, a symbol, a function call, an operator (+ - * / % == != < "
               "<= > >= && || ! ?:) or parentheses");
    tok_.kind = Token::punct;
    tok_.text = std::string(1, c);
    ++pos_;
  }

  void enter(int depth, std::size_t column) const {
    if (depth > kMaxDepth)
      fail(text_, column, "expression nested deeper than " + std::to_string(kMaxDepth) + " levels");
  }

  static NodePtr binary(Op op, std::size_t column, NodePtr lhs, NodePtr rhs) {
    auto n = std::make_shared<Expr::Node>();
    n->op = op;
    n->column = column;
    n->lhs = std::move(lhs);
    n->rhs = std::move(rhs);
    return n;
  }

  /// c ? a : b, right-associative as in C ("a ? b : c ? d : e" is "a ? b : (c ? d : e)").
  NodePtr expression(int depth) {
    enter(depth, tok_.column);
    NodePtr c = logical_or(depth);
    if (!is("?")) return c;
    const std::size_t column = tok_.column;
    advance();
    NodePtr a = expression(depth + 1);
    if (!is(":"))
      fail(text_, tok_.column,
           "expected ':' of the '?' at column " + std::to_string(column) + ", found " + found());
    advance();
    NodePtr b = expression(depth + 1);
    auto n = std::make_shared<Expr::Node>();
    n->op = Op::conditional;
    n->column = column;
    n->cond = std::move(c);
    n->lhs = std::move(a);
    n->rhs = std::move(b);
    return n;
  }

  NodePtr logical_or(int depth) {
    NodePtr lhs = logical_and(depth);
    while (is("||")) {
      const std::size_t column = tok_.column;
      advance();
      lhs = binary(Op::logical_or, column, lhs, logical_and(depth));
    }
    return lhs;
  }

  NodePtr logical_and(int depth) {
    NodePtr lhs = comparison(depth);
    while (is("&&")) {
      const std::size_t column = tok_.column;
      advance();
      lhs = binary(Op::logical_and, column, lhs, comparison(depth));
    }
    return lhs;
  }

  /// At most one comparison per operand of && and ||: "a < b < c" means "(a < b) < c" in C,
  /// which is never what a manifest author meant.
  NodePtr comparison(int depth) {
    NodePtr lhs = sum(depth);
    const auto op = comparison_op();
    if (!op) return lhs;
    const std::size_t column = tok_.column;
    advance();
    lhs = binary(*op, column, lhs, sum(depth));
    if (comparison_op())
      fail(text_, tok_.column,
           "comparisons do not chain; write \"a < b && b < c\" instead of \"a < b < c\"");
    return lhs;
  }

  std::optional<Op> comparison_op() const {
    if (tok_.kind != Token::punct) return std::nullopt;
    const std::string& t = tok_.text;
    if (t == "==") return Op::eq;
    if (t == "!=") return Op::ne;
    if (t == "<") return Op::lt;
    if (t == "<=") return Op::le;
    if (t == ">") return Op::gt;
    if (t == ">=") return Op::ge;
    return std::nullopt;
  }

  NodePtr sum(int depth) {
    NodePtr lhs = term(depth);
    while (is("+") || is("-")) {
      const Op op = tok_.text == "+" ? Op::add : Op::sub;
      const std::size_t column = tok_.column;
      advance();
      lhs = binary(op, column, lhs, term(depth));
    }
    return lhs;
  }

  NodePtr term(int depth) {
    NodePtr lhs = unary(depth);
    while (is("*") || is("/") || is("%")) {
      const Op op = tok_.text == "*" ? Op::mul : tok_.text == "/" ? Op::div : Op::mod;
      const std::size_t column = tok_.column;
      advance();
      lhs = binary(op, column, lhs, unary(depth));
    }
    return lhs;
  }

  NodePtr unary(int depth) {
    if (is("-") || is("!")) {
      const std::size_t column = tok_.column;
      const Op op = is("-") ? Op::neg : Op::logical_not;
      enter(depth + 1, column);
      advance();
      auto n = std::make_shared<Expr::Node>();
      n->op = op;
      n->column = column;
      n->lhs = unary(depth + 1);
      return n;
    }
    return primary(depth);
  }

  NodePtr primary(int depth) {
    const Token t = tok_;
    if (t.kind == Token::integer) {
      advance();
      auto n = std::make_shared<Expr::Node>();
      n->column = t.column;
      int64_t v = 0;
      for (char c : t.text) {
        const int d = c - '0';
        if (v > (std::numeric_limits<int64_t>::max() - d) / 10)
          fail(text_, t.column,
               "the number " + t.text + " does not fit in a signed 64-bit integer");
        v = v * 10 + d;
      }
      n->value = v;
      return n;
    }
    if (t.kind == Token::ident) {
      advance();
      if (!is("(")) {
        auto n = std::make_shared<Expr::Node>();
        n->op = Op::symbol;
        n->name = t.text;
        n->column = t.column;
        return n;
      }
      Op op;
      if (t.text == "ceil_div") op = Op::ceil_div;
      else if (t.text == "min") op = Op::min;
      else if (t.text == "max") op = Op::max;
      else if (t.text == "round_up") op = Op::round_up;
      else
        fail(text_, t.column,
             "unknown function '" + t.text + "'; expected one of " + listed(expr_function_names()));
      advance();  // '('
      std::vector<NodePtr> args;
      if (!is(")")) {
        args.push_back(expression(depth + 1));
        while (is(",")) {
          advance();
          args.push_back(expression(depth + 1));
        }
      }
      if (!is(")"))
        fail(text_, tok_.column,
             "expected ',' or ')' in the call of " + t.text + ", found " + found());
      advance();
      if (args.size() != 2)
        fail(text_, t.column, t.text + " takes 2 arguments, found " + std::to_string(args.size()));
      return binary(op, t.column, args[0], args[1]);
    }
    if (is("(")) {
      advance();
      NodePtr inner = expression(depth + 1);
      if (!is(")"))
        fail(text_, tok_.column,
             "expected ')' to close the '(' at column " + std::to_string(t.column) + ", found " +
                 found());
      advance();
      return inner;
    }
    fail(text_, t.column, "expected a number, a symbol, a function call or '(', found " + found());
  }

  const std::string& text_;
  std::size_t pos_ = 0;
  Token tok_;
};

void collect_symbols(const Expr::Node& n, std::vector<std::string>& out) {
  if (n.op == Op::symbol) {
    for (const auto& s : out)
      if (s == n.name) return;
    out.push_back(n.name);
    return;
  }
  if (n.cond) collect_symbols(*n.cond, out);
  if (n.lhs) collect_symbols(*n.lhs, out);
  if (n.rhs) collect_symbols(*n.rhs, out);
}

const Expr::Node* first_unknown(const Expr::Node& n,
                                const std::set<std::string, std::less<>>& known) {
  if (n.op == Op::symbol) return known.count(n.name) ? nullptr : &n;
  if (n.cond)
    if (const auto* u = first_unknown(*n.cond, known)) return u;
  if (n.lhs)
    if (const auto* u = first_unknown(*n.lhs, known)) return u;
  if (n.rhs)
    if (const auto* u = first_unknown(*n.rhs, known)) return u;
  return nullptr;
}

class Evaluator {
 public:
  Evaluator(const std::string& text, const SymbolValues& values) : text_(text), values_(values) {}

  int64_t eval(const Expr::Node& n) const {
    switch (n.op) {
      case Op::literal:
        return n.value;
      case Op::symbol: {
        auto it = values_.find(n.name);
        if (it == values_.end()) fail(text_, n.column, "no value for symbol '" + n.name + "'");
        return it->second;
      }
      case Op::neg: {
        const int64_t v = eval(*n.lhs);
        if (v == std::numeric_limits<int64_t>::min()) overflow(n, "-(" + std::to_string(v) + ")");
        return -v;
      }
      // && and || do not evaluate their right side when the left decides, as in C: a guard such
      // as "N > 0 && M / N > 2" never divides by zero.
      case Op::logical_not:
        return eval(*n.lhs) == 0 ? 1 : 0;
      case Op::logical_and:
        return eval(*n.lhs) != 0 && eval(*n.rhs) != 0 ? 1 : 0;
      case Op::logical_or:
        return eval(*n.lhs) != 0 || eval(*n.rhs) != 0 ? 1 : 0;
      case Op::conditional:  // only the chosen side is evaluated, as in C
        return eval(*n.cond) != 0 ? eval(*n.lhs) : eval(*n.rhs);
      default:
        break;
    }
    const int64_t a = eval(*n.lhs);
    const int64_t b = eval(*n.rhs);
    int64_t r = 0;
    switch (n.op) {
      case Op::add:
        if (__builtin_add_overflow(a, b, &r)) overflow(n, show(a, " + ", b));
        return r;
      case Op::sub:
        if (__builtin_sub_overflow(a, b, &r)) overflow(n, show(a, " - ", b));
        return r;
      case Op::mul:
        if (__builtin_mul_overflow(a, b, &r)) overflow(n, show(a, " * ", b));
        return r;
      case Op::div:
        if (b == 0) by_zero(n, "division", *n.rhs);
        if (b == -1 && a == std::numeric_limits<int64_t>::min()) overflow(n, show(a, " / ", b));
        return a / b;
      case Op::mod:
        if (b == 0) by_zero(n, "modulo", *n.rhs);
        if (b == -1) return 0;
        return a % b;
      case Op::eq:
        return a == b ? 1 : 0;
      case Op::ne:
        return a != b ? 1 : 0;
      case Op::lt:
        return a < b ? 1 : 0;
      case Op::le:
        return a <= b ? 1 : 0;
      case Op::gt:
        return a > b ? 1 : 0;
      case Op::ge:
        return a >= b ? 1 : 0;
      case Op::min:
        return a < b ? a : b;
      case Op::max:
        return a > b ? a : b;
      case Op::ceil_div:
        return ceil_div(n, a, b, "ceil_div");
      case Op::round_up: {
        const int64_t q = ceil_div(n, a, b, "round_up");
        if (__builtin_mul_overflow(q, b, &r))
          overflow(n, "round_up(" + std::to_string(a) + ", " + std::to_string(b) + ")");
        return r;
      }
      default:
        break;
    }
    fail(text_, n.column, "internal error: unknown operation");
  }

 private:
  static std::string show(int64_t a, const char* op, int64_t b) {
    return std::to_string(a) + op + std::to_string(b);
  }

  [[noreturn]] void overflow(const Expr::Node& n, const std::string& what) const {
    fail(text_, n.column, "64-bit integer overflow in " + what);
  }

  [[noreturn]] void by_zero(const Expr::Node& n, const char* what,
                            const Expr::Node& divisor) const {
    std::string detail;
    if (divisor.op == Op::symbol) detail = " (" + divisor.name + " is 0)";
    fail(text_, n.column, std::string(what) + " by zero" + detail);
  }

  int64_t ceil_div(const Expr::Node& n, int64_t a, int64_t b, const char* fn) const {
    if (b == 0) by_zero(n, (std::string(fn) + " division").c_str(), *n.rhs);
    if (b == -1 && a == std::numeric_limits<int64_t>::min())
      overflow(n, std::string(fn) + "(" + std::to_string(a) + ", -1)");
    int64_t q = a / b;
    // Truncation rounded toward zero; step up when the exact quotient was positive and inexact.
    if (a % b != 0 && ((a < 0) == (b < 0))) ++q;
    return q;
  }

  const std::string& text_;
  const SymbolValues& values_;
};

/// Collects into `out` the constants `symbol` is compared with anywhere in the tree.
void collect_bounds(const Expr::Node& n, const std::string& symbol, const std::string& text,
                    std::vector<int64_t>& out) {
  if (is_comparison(n.op)) {
    const Expr::Node* other = nullptr;
    if (n.lhs->op == Op::symbol && n.lhs->name == symbol) other = n.rhs.get();
    else if (n.rhs->op == Op::symbol && n.rhs->name == symbol) other = n.lhs.get();
    std::vector<std::string> names;
    if (other) collect_symbols(*other, names);
    if (other && names.empty()) {
      static const SymbolValues kNone;
      try {
        out.push_back(Evaluator(text, kNone).eval(*other));
      } catch (const Error&) {
        // A constant side that does not evaluate (overflow, division by zero) bounds nothing.
      }
    }
  }
  if (n.cond) collect_bounds(*n.cond, symbol, text, out);
  if (n.lhs) collect_bounds(*n.lhs, symbol, text, out);
  if (n.rhs) collect_bounds(*n.rhs, symbol, text, out);
}

// Constant divisors of a quotient, remainder, ceil_div or round_up whose dividend names `symbol`.
void collect_divisors(const Expr::Node& n, const std::string& symbol, const std::string& text,
                      std::vector<int64_t>& out) {
  if ((n.op == Op::div || n.op == Op::mod || n.op == Op::ceil_div || n.op == Op::round_up) &&
      n.lhs && n.rhs) {
    std::vector<std::string> dividend, divisor;
    collect_symbols(*n.lhs, dividend);
    collect_symbols(*n.rhs, divisor);
    if (divisor.empty() && std::find(dividend.begin(), dividend.end(), symbol) != dividend.end()) {
      static const SymbolValues kNone;
      try {
        const int64_t d = Evaluator(text, kNone).eval(*n.rhs);
        if (d > 1) out.push_back(d);
      } catch (const Error&) {
      }
    }
  }
  if (n.cond) collect_divisors(*n.cond, symbol, text, out);
  if (n.lhs) collect_divisors(*n.lhs, symbol, text, out);
  if (n.rhs) collect_divisors(*n.rhs, symbol, text, out);
}

}  // namespace

std::vector<int64_t> Expr::divisors_of(const std::string& symbol) const {
  std::vector<int64_t> out;
  collect_divisors(*root_, symbol, text_, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

const std::vector<std::string>& expr_function_names() {
  static const std::vector<std::string> names = {"ceil_div", "max", "min", "round_up"};
  return names;
}

Expr::Expr() : Expr(parse("0")) {}

Expr::Expr(std::string text, std::shared_ptr<const Node> root)
    : text_(std::move(text)), root_(std::move(root)) {}

Expr Expr::parse(const std::string& text) {
  if (text.size() > kMaxExprLength)
    fail(text, 1,
         "an expression may have at most " + std::to_string(kMaxExprLength) +
             " characters, found " + std::to_string(text.size()));
  Parser parser(text);
  NodePtr root = parser.parse();
  return Expr(text, std::move(root));
}

std::vector<std::string> Expr::symbols() const {
  std::vector<std::string> out;
  collect_symbols(*root_, out);
  return out;
}

std::vector<std::string> listed_names(const std::set<std::string, std::less<>>& known) {
  std::vector<std::string> out;
  bool device = false;
  for (const auto& k : known) {
    if (k.rfind("device_", 0) == 0) {
      device = true;
      continue;
    }
    out.push_back(k);
  }
  if (device) out.push_back("device_* (the device's properties)");
  return out;
}

void Expr::check_symbols(const std::set<std::string, std::less<>>& known) const {
  if (const Node* u = first_unknown(*root_, known))
    fail(text_, u->column,
         "unknown symbol '" + u->name + "'; known symbols: " + listed(listed_names(known)));
}

std::vector<int64_t> Expr::comparison_bounds(const std::string& symbol) const {
  std::vector<int64_t> out;
  collect_bounds(*root_, symbol, text_, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int64_t Expr::evaluate(const SymbolValues& values) const {
  return Evaluator(text_, values).eval(*root_);
}

int64_t evaluate_expr(const std::string& text, const SymbolValues& values) {
  return Expr::parse(text).evaluate(values);
}

SymbolValues symbol_values(const std::vector<std::pair<std::string, int64_t>>& dims) {
  SymbolValues values;
  for (const auto& [name, v] : dims) values[name] = v;
  return values;
}

bool is_identifier(const std::string& s, std::size_t max_len) {
  if (s.empty() || s.size() > max_len) return false;
  if (!(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

}  // namespace kgate::package
