// Recursive-descent parser and evaluator of manifest float expressions.
#include "core/float_expr.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

#include "core/error.hpp"
#include "core/expr.hpp"
#include "core/safe_text.hpp"

namespace kgate::package {

namespace {

constexpr std::size_t kMaxLength = 1024;
constexpr int kMaxDepth = 64;

enum class Op { literal, symbol, neg, add, sub, mul, div, sqrt, rsqrt, min, max };

}  // namespace

struct FloatExpr::Node {
  Op op = Op::literal;
  double value = 0;
  std::string name;
  std::size_t column = 1;
  std::vector<std::shared_ptr<const Node>> args;
};

namespace {

using NodePtr = std::shared_ptr<const FloatExpr::Node>;

[[noreturn]] void fail(const std::string& text, std::size_t column, const std::string& what) {
  throw Error(ErrorKind::package,
              "in \"" + text + "\" at column " + std::to_string(column) + ": " + what);
}

struct Function {
  const char* name;
  Op op;
  std::size_t arity;
};
constexpr Function kFunctions[] = {
    {"sqrt", Op::sqrt, 1}, {"rsqrt", Op::rsqrt, 1}, {"min", Op::min, 2}, {"max", Op::max, 2}};

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  NodePtr parse() {
    if (text_.size() > kMaxLength)
      fail(text_.substr(0, 40) + "...", 1,
           "the expression is longer than " + std::to_string(kMaxLength) + " characters");
    NodePtr root = sum(0);
    skip_space();
    if (pos_ < text_.size()) fail(text_, pos_ + 1, "unexpected " + found());
    return root;
  }

 private:
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  std::string found() const {
    if (pos_ >= text_.size()) return "the end of the expression";
    return "'" + inline_untrusted(std::string(1, text_[pos_])) + "'";
  }
  bool take(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  static NodePtr node(Op op, std::size_t column, std::vector<NodePtr> args) {
    auto n = std::make_shared<FloatExpr::Node>();
    n->op = op;
    n->column = column;
    n->args = std::move(args);
    return n;
  }
  void deeper(int depth) const {
    if (depth > kMaxDepth)
      fail(text_, pos_ + 1, "nested more than " + std::to_string(kMaxDepth) + " levels deep");
  }

  NodePtr sum(int depth) {
    deeper(depth);
    NodePtr lhs = term(depth + 1);
    for (;;) {
      skip_space();
      const std::size_t column = pos_ + 1;
      if (take('+')) lhs = node(Op::add, column, {lhs, term(depth + 1)});
      else if (take('-')) lhs = node(Op::sub, column, {lhs, term(depth + 1)});
      else return lhs;
    }
  }
  NodePtr term(int depth) {
    deeper(depth);
    NodePtr lhs = unary(depth + 1);
    for (;;) {
      skip_space();
      const std::size_t column = pos_ + 1;
      if (take('*')) lhs = node(Op::mul, column, {lhs, unary(depth + 1)});
      else if (take('/')) lhs = node(Op::div, column, {lhs, unary(depth + 1)});
      else if (pos_ < text_.size() && text_[pos_] == '%')
        fail(text_, column,
             "'%' is not a float operation; an integer argument is {\"shape\": ...}");
      else return lhs;
    }
  }
  NodePtr unary(int depth) {
    deeper(depth);
    skip_space();
    const std::size_t column = pos_ + 1;
    if (take('-')) return node(Op::neg, column, {unary(depth + 1)});
    if (take('+')) return unary(depth + 1);
    return primary(depth + 1);
  }
  NodePtr primary(int depth) {
    skip_space();
    const std::size_t column = pos_ + 1;
    if (take('(')) {
      NodePtr inner = sum(depth + 1);
      if (!take(')'))
        fail(text_, pos_ + 1,
             "expected ')' to close the '(' at column " + std::to_string(column) + ", found " +
                 found());
      return inner;
    }
    if (pos_ < text_.size() &&
        (std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.')) {
      double v = 0;
      const char* first = text_.data() + pos_;
      const auto [end, ec] = std::from_chars(first, text_.data() + text_.size(), v);
      if (ec != std::errc() || end == first)
        fail(text_, column, "expected a number, found " + found());
      pos_ += static_cast<std::size_t>(end - first);
      if (pos_ < text_.size() &&
          (std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
        fail(text_, pos_ + 1, "unexpected " + found() + " after the number");
      auto n = std::make_shared<FloatExpr::Node>();
      n->value = v;
      n->column = column;
      return n;
    }
    if (pos_ < text_.size() &&
        (std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      const std::size_t start = pos_;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
        ++pos_;
      const std::string name = text_.substr(start, pos_ - start);
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == '(') {
        ++pos_;
        const Function* f = nullptr;
        for (const auto& candidate : kFunctions)
          if (name == candidate.name) f = &candidate;
        if (!f)
          fail(text_, column,
               "unknown function '" + inline_untrusted(name) + "'; expected " +
                   join(float_expr_function_names()));
        std::vector<NodePtr> args{sum(depth + 1)};
        while (take(',')) args.push_back(sum(depth + 1));
        if (!take(')'))
          fail(text_, pos_ + 1,
               "expected ')' or ',' in the call of " + name + ", found " + found());
        if (args.size() != f->arity)
          fail(text_, column,
               name + " takes " + std::to_string(f->arity) + " argument" +
                   (f->arity == 1 ? "" : "s") + ", found " + std::to_string(args.size()));
        return node(f->op, column, std::move(args));
      }
      auto n = std::make_shared<FloatExpr::Node>();
      n->op = Op::symbol;
      n->name = name;
      n->column = column;
      return n;
    }
    fail(text_, column, "expected a number, a name, a function or '(', found " + found());
  }

  const std::string& text_;
  std::size_t pos_ = 0;
};

void collect(const NodePtr& n, std::vector<std::string>& out) {
  if (n->op == Op::symbol && std::find(out.begin(), out.end(), n->name) == out.end())
    out.push_back(n->name);
  for (const auto& a : n->args) collect(a, out);
}

const FloatExpr::Node* first_unknown(const NodePtr& n,
                                     const std::set<std::string, std::less<>>& known) {
  if (n->op == Op::symbol && !known.count(n->name)) return n.get();
  for (const auto& a : n->args)
    if (const auto* u = first_unknown(a, known)) return u;
  return nullptr;
}

double eval(const std::string& text, const FloatExpr::Node& n, const FloatValues& values) {
  const auto arg = [&](std::size_t i) { return eval(text, *n.args[i], values); };
  switch (n.op) {
    case Op::literal:
      return n.value;
    case Op::symbol: {
      const auto it = values.find(n.name);
      if (it == values.end()) fail(text, n.column, "'" + n.name + "' has no value");
      return it->second;
    }
    case Op::neg:
      return -arg(0);
    case Op::add:
      return arg(0) + arg(1);
    case Op::sub:
      return arg(0) - arg(1);
    case Op::mul:
      return arg(0) * arg(1);
    case Op::div:
      return arg(0) / arg(1);
    case Op::sqrt:
      return std::sqrt(arg(0));
    case Op::rsqrt:
      return 1.0 / std::sqrt(arg(0));
    case Op::min:
      return std::fmin(arg(0), arg(1));
    case Op::max:
      return std::fmax(arg(0), arg(1));
  }
  return 0;
}

}  // namespace

const std::vector<std::string>& float_expr_function_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& f : kFunctions) out.emplace_back(f.name);
    return out;
  }();
  return names;
}

FloatExpr::FloatExpr() : FloatExpr("0", std::make_shared<Node>()) {}

FloatExpr::FloatExpr(std::string text, std::shared_ptr<const Node> root)
    : text_(std::move(text)), root_(std::move(root)) {}

FloatExpr FloatExpr::parse(const std::string& text) {
  Parser p(text);
  return FloatExpr(text, p.parse());
}

std::vector<std::string> FloatExpr::symbols() const {
  std::vector<std::string> out;
  collect(root_, out);
  return out;
}

void FloatExpr::check_symbols(const std::set<std::string, std::less<>>& known) const {
  if (const Node* u = first_unknown(root_, known)) {
    const std::vector<std::string> names = listed_names(known);
    fail(text_, u->column,
         "unknown name '" + u->name + "'; expected a shape symbol or an attribute (" +
             (names.empty() ? std::string("none") : join(names)) + ")");
  }
}

double FloatExpr::evaluate(const FloatValues& values) const { return eval(text_, *root_, values); }

}  // namespace kgate::package
