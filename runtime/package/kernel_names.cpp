// Naming a binary's kernels by their C++ names (kernel_names.hpp).
#include "runtime/package/kernel_names.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

#include "core/safe_text.hpp"
#include "core/suggest.hpp"

namespace kgate::package {

namespace {

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_word(const std::string& t) { return !t.empty() && word_char(t[0]); }
bool is_number(const std::string& t) {
  return !t.empty() && std::isdigit(static_cast<unsigned char>(t[0]));
}

std::vector<std::string> tokens_of(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (word_char(c)) {
      // A number may hold '.' (1.5f); an identifier may not.
      const bool digit = std::isdigit(static_cast<unsigned char>(c)) != 0;
      std::size_t e = i;
      while (e < s.size() && (word_char(s[e]) || (digit && s[e] == '.'))) ++e;
      out.push_back(s.substr(i, e - i));
      i = e;
    } else if (c == ':' && i + 1 < s.size() && s[i + 1] == ':') {
      out.emplace_back("::");
      i += 2;
    } else {
      out.emplace_back(1, c);
      ++i;
    }
  }
  return out;
}

/// 8u, 8ul, 0x10 -> "8", "8", "16"; other numbers as they are.
std::string plain_integer(const std::string& t) {
  std::string digits = t;
  while (!digits.empty() && std::strchr("uUlL", digits.back())) digits.pop_back();
  if (digits.empty()) return t;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(digits.c_str(), &end, 0);
  if (!end || *end != '\0') return t;
  return std::to_string(v);
}

const std::map<std::string, std::vector<std::string>>& synonyms() {
  static const std::map<std::string, std::vector<std::string>> m = {
      {"half", {"__half"}},
      {"nv_bfloat16", {"__nv_bfloat16"}},
      {"uint", {"unsigned", "int"}},
      {"ushort", {"unsigned", "short"}},
      {"uint32_t", {"unsigned", "int"}},
      {"int32_t", {"int"}},
      {"int64_t", {"long"}},
      {"uint64_t", {"unsigned", "long"}},
      {"size_t", {"unsigned", "long"}},
      {"ptrdiff_t", {"long"}},
      {"int16_t", {"short"}},
      {"uint16_t", {"unsigned", "short"}},
      {"int8_t", {"signed", "char"}},
      {"uint8_t", {"unsigned", "char"}},
  };
  return m;
}

}  // namespace

std::string normalised_kernel_name(const std::string& name) {
  const std::vector<std::string> in = tokens_of(name);
  std::vector<std::string> t;
  for (std::size_t i = 0; i < in.size(); ++i) {
    // A leading "::" (global scope), and std:: before a fixed-width integer type.
    if (in[i] == "::" && (t.empty() || !is_word(t.back()))) continue;
    if (in[i] == "std" && i + 2 < in.size() && in[i + 1] == "::" && synonyms().count(in[i + 2]) &&
        in[i + 2] != "half" && in[i + 2] != "nv_bfloat16") {
      ++i;
      continue;
    }
    // A cast in front of a literal ("(char)65", "(unsigned char)3"): the literal.
    if (in[i] == "(") {
      std::size_t j = i + 1;
      while (j < in.size() && is_word(in[j]) && !is_number(in[j])) ++j;
      if (j > i + 1 && j + 1 < in.size() && in[j] == ")" &&
          (is_number(in[j + 1]) ||
           (in[j + 1] == "-" && j + 2 < in.size() && is_number(in[j + 2])))) {
        i = j;
        continue;
      }
    }
    if (is_number(in[i])) {
      t.push_back(plain_integer(in[i]));
      continue;
    }
    if (const auto s = synonyms().find(in[i]);
        s != synonyms().end() && (t.empty() || t.back() != "::")) {
      t.insert(t.end(), s->second.begin(), s->second.end());
      continue;
    }
    t.push_back(in[i]);
  }
  // signed int -> int, short int -> short, long int -> long, a lone unsigned -> unsigned int.
  std::vector<std::string> u;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::string next = i + 1 < t.size() ? t[i + 1] : "";
    if (t[i] == "signed" && next != "char") continue;
    if (t[i] == "int" && !u.empty() && (u.back() == "short" || u.back() == "long")) continue;
    u.push_back(t[i]);
    if (t[i] == "unsigned" && next != "char" && next != "short" && next != "int" && next != "long")
      u.emplace_back("int");
  }
  std::string out;
  for (std::size_t i = 0; i < u.size(); ++i) {
    if (i > 0 && is_word(u[i - 1]) && is_word(u[i])) out += ' ';
    out += u[i];
  }
  return out;
}

std::string demangled_symbol(const std::string& symbol) {
  if (symbol.rfind("_Z", 0) != 0) return symbol;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> text(
      abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && text ? std::string(text.get()) : symbol;
}

namespace {

/// The demangled text without its return type ("void "): where the name starts, after the last
/// space outside <> and ().
std::string without_return_type(const std::string& s) {
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<' || s[i] == '(') ++depth;
    if (s[i] == '>' || s[i] == ')') --depth;
    if (depth == 0 && s[i] == ' ') start = i + 1;
    if (depth == 0 && s[i] == '(') break;  // the parameter list: no return type after it
  }
  return s.substr(start);
}

/// The start of the top-level parameter list of a demangled signature, or npos.
std::size_t parameter_list(const std::string& s) {
  if (s.empty() || s.back() != ')') return std::string::npos;
  int depth = 0;
  for (std::size_t i = s.size(); i-- > 0;) {
    if (s[i] == ')') ++depth;
    if (s[i] == '(' && --depth == 0) return i;
  }
  return std::string::npos;
}

}  // namespace

std::string kernel_cpp_name(const std::string& symbol) {
  std::string s = demangled_symbol(symbol);
  if (s == symbol) return symbol;
  if (const std::size_t open = parameter_list(s); open != std::string::npos) s.erase(open);
  return without_return_type(s);
}

std::vector<std::string> match_kernel_name(const std::string& name,
                                           const std::vector<std::string>& symbols) {
  if (std::find(symbols.begin(), symbols.end(), name) != symbols.end()) return {name};
  std::string trimmed = name;
  while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back())))
    trimmed.pop_back();
  const bool signature = parameter_list(trimmed) != std::string::npos;
  const std::string wanted = normalised_kernel_name(trimmed);
  std::vector<std::string> out;
  for (const auto& sym : symbols) {
    const std::string have =
        signature ? without_return_type(demangled_symbol(sym)) : kernel_cpp_name(sym);
    if (normalised_kernel_name(have) == wanted) out.push_back(sym);
  }
  return out;
}

std::string kernel_name_problem(const std::string& name, const std::vector<std::string>& matches,
                                const std::vector<std::string>& symbols, const std::string& file) {
  if (matches.size() > 1) {
    std::string listed;
    for (const auto& m : matches)
      listed += (listed.empty() ? "" : ", ") +
                quote_untrusted(without_return_type(demangled_symbol(m))) + " (symbol " +
                quote_untrusted(m) + ")";
    return "kernel " + quote_untrusted(name) + " names " + std::to_string(matches.size()) +
           " kernels of " + quote_untrusted(file) + ": " + listed +
           "; name one with its parameter list, as listed, or by its symbol";
  }
  std::vector<std::string> names;
  for (const auto& s : symbols)
    if (s.rfind('$', 0) != 0) names.push_back(kernel_cpp_name(s));  // not "$__internal_0_..."
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  const std::string guess = closest(name, names);
  std::string listed;
  std::size_t shown = 0;
  if (!guess.empty()) listed = quote_untrusted(guess), ++shown;
  for (const auto& n : names) {
    if (n == guess) continue;
    if (shown == 24) {
      listed += ", ...";
      break;
    }
    listed += (listed.empty() ? "" : ", ") + quote_untrusted(n);
    ++shown;
  }
  return "kernel " + quote_untrusted(name) + " is not in " + quote_untrusted(file) +
         (guess.empty() ? "" : "; did you mean " + quote_untrusted(guess) + "?") +
         " It holds: " + (listed.empty() ? std::string("no kernels") : listed) +
         ". Name a kernel by its C++ name (\"ns::kernel<8, __half>\"; whitespace and the usual "
         "type spellings do not matter), its parameter list added where two share a name, or by "
         "its symbol (an extern \"C\" name, or a mangled one)";
}

}  // namespace kgate::package
