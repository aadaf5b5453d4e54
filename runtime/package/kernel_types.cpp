// Parameter types from mangled kernel names, through the C++ runtime's demangler.
#include "runtime/package/kernel_types.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace kgate::package {

namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(' ');
  const auto e = s.find_last_not_of(' ');
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

/// `text` without the words "const", "volatile" and "__restrict__" (qualifiers do not change what
/// is passed).
std::string unqualified(const std::string& text) {
  std::string out, word;
  auto flush = [&] {
    if (!word.empty() && word != "const" && word != "volatile" && word != "__restrict__" &&
        word != "__restrict")
      out += (out.empty() ? "" : " ") + word;
    word.clear();
  };
  for (char c : text) {
    if (c == ' ') {
      flush();
    } else if (c == '*') {
      flush();
      out += "*";
    } else {
      word += c;
    }
  }
  flush();
  return out;
}

std::optional<ScalarType> scalar_of(const std::string& t) {
  if (t == "int") return ScalarType::i32;
  if (t == "unsigned int") return ScalarType::u32;
  if (t == "long" || t == "long long") return ScalarType::i64;
  if (t == "unsigned long" || t == "unsigned long long") return ScalarType::u64;
  if (t == "float") return ScalarType::f32;
  if (t == "double") return ScalarType::f64;
  return std::nullopt;
}

bool is_other_scalar(const std::string& t) {
  return t == "bool" || t == "char" || t == "signed char" || t == "unsigned char" || t == "short" ||
         t == "unsigned short" || t == "__half" || t == "__nv_bfloat16" || t == "half" ||
         t == "wchar_t" || t == "char16_t" || t == "char32_t" || t == "long double";
}

std::optional<DType> dtype_of(const std::string& t) {
  if (t == "float") return DType::f32;
  if (t == "double") return DType::f64;
  if (t == "__half" || t == "half") return DType::f16;
  if (t == "__nv_bfloat16" || t == "nv_bfloat16") return DType::bf16;
  if (t == "int") return DType::i32;
  if (t == "long" || t == "long long") return DType::i64;
  if (t == "signed char" || t == "char") return DType::i8;
  if (t == "unsigned char") return DType::u8;
  if (t == "bool") return DType::b8;
  return std::nullopt;
}

ParamType param_of(const std::string& text) {
  ParamType p;
  p.text = trim(text);
  const std::string u = unqualified(p.text);
  if (u.empty() || u.find('(') != std::string::npos || u.find('&') != std::string::npos ||
      u.find('[') != std::string::npos)
    return p;
  if (u.back() == '*') {
    p.kind = ParamType::Kind::pointer;
    const std::string pointee = u.substr(0, u.size() - 1);
    if (pointee.find('*') == std::string::npos) p.pointee = dtype_of(trim(pointee));
    return p;
  }
  if (auto s = scalar_of(u)) {
    p.kind = ParamType::Kind::scalar;
    p.scalar = s;
  } else if (is_other_scalar(u)) {
    p.kind = ParamType::Kind::scalar;
  }
  return p;
}

/// Splits a parameter list at its top-level commas (not inside <>, () or []).
std::vector<std::string> split_params(const std::string& list) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : list) {
    if (c == '<' || c == '(' || c == '[') ++depth;
    if (c == '>' || c == ')' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty()) out.push_back(cur);
  return out;
}

}  // namespace

std::string param_probe_expression(const std::string& kernel) {
  return "kgate_param_probe<decltype(&" + kernel + ")>";
}

std::optional<std::vector<ParamType>> probe_param_types(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> text(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || !text) return std::nullopt;
  const std::string s = text.get();
  // "void kgate_param_probe<void (*)(float const*, float*, long long)>()"
  const std::size_t open = s.find("(*)(");
  if (s.rfind("void kgate_param_probe<", 0) != 0 || open == std::string::npos) return std::nullopt;
  int depth = 0;
  std::size_t close = std::string::npos;
  for (std::size_t i = open + 3; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')' && --depth == 0) {
      close = i;
      break;
    }
  }
  if (close == std::string::npos) return std::nullopt;
  const std::string list = s.substr(open + 4, close - open - 4);
  std::vector<ParamType> out;
  if (trim(list) == "void" || trim(list).empty()) return out;
  for (const auto& p : split_params(list)) out.push_back(param_of(p));
  return out;
}

std::optional<std::vector<ParamType>> mangled_param_types(const std::string& mangled) {
  if (mangled.rfind("_Z", 0) != 0) return std::nullopt;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> text(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || !text) return std::nullopt;
  const std::string s = text.get();
  // The parameter list is the last top-level "( ... )" (a template argument may hold parentheses).
  if (s.empty() || s.back() != ')') return std::nullopt;
  int depth = 0;
  std::size_t open = std::string::npos;
  for (std::size_t i = s.size(); i-- > 0;) {
    if (s[i] == ')') ++depth;
    if (s[i] == '(' && --depth == 0) {
      open = i;
      break;
    }
  }
  if (open == std::string::npos) return std::nullopt;
  const std::string list = s.substr(open + 1, s.size() - open - 2);
  std::vector<ParamType> out;
  if (trim(list) == "void" || trim(list).empty()) return out;
  for (const auto& p : split_params(list)) out.push_back(param_of(p));
  return out;
}

namespace {

const TensorSpec* tensor_spec(const OpSignature& op, const std::string& name) {
  for (const auto& t : op.inputs)
    if (t.name == name) return &t;
  for (const auto& t : op.outputs)
    if (t.name == name) return &t;
  return nullptr;
}

std::string describe_arg(const KernelArg& a) {
  switch (a.kind) {
    case KernelArg::Kind::tensor:
      return "tensor " + a.name;
    case KernelArg::Kind::workspace:
      return "workspace " + a.name;
    default:
      return std::string(scalar_type_name(a.type));
  }
}

}  // namespace

std::vector<ManifestProblem> args_match_types(
    const PackageManifest& m, const OpSignature& op, const CompileResult& r,
    const std::map<std::string, std::vector<ParamType>>& declared) {
  std::vector<ManifestProblem> problems;
  for (std::size_t i = 0; i < m.launches.size(); ++i) {
    const Launch& l = m.launches[i];
    const std::string field =
        (l.field.empty() ? "launches[" + std::to_string(i) + "]" : l.field) + ".args";
    bool reported = false;
    for (DType d : m.guard.dtypes) {
      if (reported) break;
      const std::string expr = l.kernel_name(d);
      const CompileResult& unit = compile_unit_for(r, d, i);
      const auto low = unit.lowered_names.find(expr);
      if (expr.empty() || low == unit.lowered_names.end()) continue;
      auto types = mangled_param_types(low->second);
      if (const auto d = declared.find(expr); !types && d != declared.end())
        types = d->second;  // extern "C"
      if (!types || types->size() != l.args.size())
        continue;  // not known, or counted apart (sizes)
      for (std::size_t j = 0; j < l.args.size() && !reported; ++j) {
        const KernelArg& a = l.args[j];
        const ParamType& p = (*types)[j];
        if (p.kind == ParamType::Kind::unknown) continue;
        const bool pointer_arg =
            a.kind == KernelArg::Kind::tensor || a.kind == KernelArg::Kind::workspace;
        std::string why;
        if (pointer_arg && p.kind != ParamType::Kind::pointer) {
          why = "is a pointer (" + describe_arg(a) + "), but the kernel takes " + p.text;
        } else if (!pointer_arg && p.kind == ParamType::Kind::pointer) {
          why = "is a value (" + describe_arg(a) + "), but the kernel takes a pointer, " + p.text;
        } else if (!pointer_arg && p.scalar && *p.scalar != a.type) {
          why = std::string("is ") + scalar_type_name(a.type) + ", but the kernel takes " + p.text +
                " (" + scalar_type_name(*p.scalar) + "); set \"type\": \"" +
                scalar_type_name(*p.scalar) + "\"";
        } else if (pointer_arg && p.pointee) {
          DType element = DType::f32;
          if (a.kind == KernelArg::Kind::tensor) {
            const TensorSpec* t = tensor_spec(op, a.name);
            // A tensor without a declared dtype takes the case's; some built-in ops leave their
            // integer inputs' dtype to the reference (embedding's indices): not known here.
            if (!t || (t->dtype.empty() && !is_floating(*p.pointee))) continue;
            element = op.tensor_dtype(*t, d);
          } else {
            const auto w = std::find_if(m.workspace.begin(), m.workspace.end(),
                                        [&](const Workspace& ws) { return ws.name == a.name; });
            if (w == m.workspace.end()) continue;
            element = w->dtype;
          }
          if (element != *p.pointee && !(dtype_size(element) == dtype_size(*p.pointee) &&
                                         !is_floating(element) && !is_floating(*p.pointee)))
            why = "is " + describe_arg(a) + " of " + dtype_name(element) +
                  " elements, but the kernel takes " + p.text;
        }
        if (why.empty()) continue;
        problems.push_back({m.manifest_path.string(), field + "[" + std::to_string(j) + "]",
                            why + " (parameter " + std::to_string(j) + " of kernel \"" + expr +
                                "\" for " + dtype_name(d) + ")"});
        reported = true;
      }
    }
  }
  return problems;
}

}  // namespace kgate::package
