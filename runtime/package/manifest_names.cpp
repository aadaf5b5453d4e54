// The manifest's op and the names its launches use: attributes, NVRTC options, guard dtypes and
// ranks, symbols, workspaces and output starts (manifest_check.hpp lists the passes).
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/safe_text.hpp"
#include "core/suggest.hpp"
#include "runtime/package/device_props.hpp"
#include "runtime/package/manifest_check.hpp"
#include "runtime/package/package_files.hpp"

namespace kgate::package::check {

namespace fs = std::filesystem;
using source::kMaxRank;

// CheckState

void CheckState::problem(const std::string& field, const std::string& message) {
  if (problems.size() < kMaxProblems) problems.push_back({file, field, message});
  else ++dropped_problems;
}

std::vector<std::string> CheckState::op_tensor_names() const {
  std::vector<std::string> out;
  if (!op) return out;
  for (const auto& t : op->inputs) out.push_back(t.name);
  for (const auto& t : op->outputs) out.push_back(t.name);
  return out;
}

bool CheckState::check_tensor_name(const Value& v) {
  if (!v.is_string() || !is_identifier(v.text)) return false;  // the schema said
  if (!op) return true;
  const auto names = op_tensor_names();
  if (std::find(names.begin(), names.end(), v.text) != names.end()) return true;
  std::string msg =
      "op " + quote_untrusted(m.op) + " has no tensor " + quote_untrusted(v.text) + ";";
  const std::string guess = closest(v.text, names);
  if (!guess.empty()) msg += " did you mean " + quote_untrusted(guess) + "?";
  problem(v.field, msg + " expected one of: " + join_capped(names));
  return false;
}

std::optional<DType> CheckState::dtype_at(const Value& v, bool floating_only) {
  const std::string expected =
      floating_only ? "one of f16, bf16, f32, f64" : "one of f16, bf16, f32, f64, i32, i64";
  if (!v.is_string()) return std::nullopt;  // the schema said
  DType d;
  try {
    d = parse_dtype(v.text);
  } catch (const Error&) {
    problem(v.field, "unknown dtype " + quote_untrusted(v.text) + "; expected " + expected);
    return std::nullopt;
  }
  if (floating_only && !is_floating(d)) {
    problem(v.field,
            "dtype " + quote_untrusted(v.text) + " is not supported here; expected " + expected);
    return std::nullopt;
  }
  return d;
}

std::optional<Expr> CheckState::expr_at(const Value& v, bool tensors) {
  std::string text;
  if (v.is_integer()) text = std::to_string(v.integer);
  else if (v.is_string()) text = v.text;
  else {
    problem(v.field,
            "expected an integer expression such as \"ceil_div(N, 256)\", found " + v.found);
    return std::nullopt;
  }
  try {
    Expr e = Expr::parse(text);
    if (!tensors) {
      e.check_symbols(known_symbols);
      return e;
    }
    auto known = known_symbols;
    if (op) {
      for (const auto& t : tensor_symbol_names(*op)) known.insert(t);
    } else {  // the op's tensors are not known here: any name of the form is taken
      for (const auto& s : e.symbols())
        if (is_tensor_symbol_form(s)) known.insert(s);
    }
    e.check_symbols(known);
    return e;
  } catch (const Error& e) {
    problem(v.field, e.what());
    return std::nullopt;
  }
}

bool CheckState::is_symbol(const std::string& name) const {
  return std::find(declared_symbols.begin(), declared_symbols.end(), name) !=
         declared_symbols.end();
}

std::string CheckState::symbol_list() const {
  return declared_symbols.empty() ? "(none declared)" : join_capped(declared_symbols);
}

std::string join_capped(const std::vector<std::string>& items) { return join(items, ", ", 24); }

namespace {

bool is_builtin_symbol(const std::string& name) {
  const auto& names = builtin_symbol_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

/// An integer tensor starts at a whole, finite value that its type holds.
bool whole_start(CheckState& st, double v, DType dtype, const std::string& field,
                 const std::string& what) {
  if (is_floating(dtype)) return true;
  const double lo = dtype == DType::i32 ? -2147483648.0 : -9223372036854775808.0;
  if (std::isfinite(v) && v == std::trunc(v) && v >= lo && v < -lo) return true;
  st.problem(field, what + " is " + dtype_name(dtype) +
                        ": its start value is a whole number it holds; found " +
                        format_number(v, "%.17g"));
  return false;
}

/// A start value as written: a number, "inf" or "-inf" (nullopt: the schema said).
std::optional<double> start_value(const Value& v) {
  if (v.is_number()) return v.number;
  if (v.is_string() && v.text == "inf") return std::numeric_limits<double>::infinity();
  if (v.is_string() && v.text == "-inf") return -std::numeric_limits<double>::infinity();
  return std::nullopt;
}

}  // namespace

std::vector<std::string> option_list(CheckState& st, const std::vector<Value>& options) {
  std::vector<std::string> out;
  for (const auto& o : options) {
    // The schema holds the allow-list too; this says why an option is refused.
    const std::string err = nvrtc_option_problem(o.text);
    if (!err.empty()) st.problem(o.field, err);
    else out.push_back(o.text);
  }
  return out;
}

void check_op(const ManifestSource& s, CheckState& st) {
  st.m.format = s.format.value_or("");
  st.m.name = s.name.value_or("");
  st.m.version = s.version.value_or("");
  st.m.description = s.description.value_or("");
  if (!s.op) return;
  const std::string& op = *s.op;
  st.m.op = op;
  if (!is_identifier(op)) return;  // the schema said
  // An op no kgate builds in travels with the package as its op file (kgate-op/1), a file inside
  // the package directory like its sources.
  if (const auto& f = s.op_file) {
    fs::path resolved;
    const std::string err =
        !f->is_string()
            ? "expected the path of the op file (kgate-op/1) inside the package, found " + f->found
        : st.files_unread() ? std::string()
                            : package_path_problem(st.m.dir, f->text, PathKind::source, &resolved);
    if (!err.empty()) {
      st.problem("op_file", err);
    } else if (st.files_unread()) {
      st.m.op_file = f->text;  // (the build loads it: kgate_add_kernel embeds it)
    } else {
      st.m.op_file = resolved.string();
      if (st.options.load_op_file) {
        try {
          st.options.load_op_file(st.m.op_file);
        } catch (const std::exception& e) {
          st.problem("op_file", e.what());
          return;
        }
      }
    }
  }
  if (!st.options.find_op) return;
  st.op = st.options.find_op(op);
  if (st.op) return;
  std::string msg = "unknown op " + quote_untrusted(op) + ";";
  const std::string guess = closest(op, st.options.known_ops);
  if (!guess.empty()) msg += " did you mean " + quote_untrusted(guess) + "?";
  msg += st.options.known_ops.empty() ? " it is not in kgate's op catalogue"
                                      : " known ops: " + join_capped(st.options.known_ops);
  st.problem("op", msg);
}

void check_attributes(const ManifestSource& s, CheckState& st) {
  for (const auto& a : s.attributes) {
    const Value& v = a.value;
    if (is_builtin_symbol(a.name) || is_device_symbol(a.name)) {
      st.problem(v.field,
                 quote_untrusted(a.name) +
                     " is a built-in symbol of expressions; an attribute cannot take its name");
      continue;
    }
    if (st.op && !st.op->attributes.count(a.name)) {
      std::vector<std::string> names;
      for (const auto& [n, d] : st.op->attributes) names.push_back(n);
      st.problem(v.field,
                 "op " + quote_untrusted(st.m.op) + " has no attribute " + quote_untrusted(a.name) +
                     "; expected one of: " + (names.empty() ? "(none)" : join_capped(names)));
      continue;
    }
    // Integers that a double (and so the attribute) holds exactly: 2^64 - 1 used to wrap.
    constexpr int64_t kExact = int64_t{1} << 53;
    if (v.is_integer() && ((v.is_unsigned && v.unsigned_value > static_cast<uint64_t>(kExact)) ||
                           (!v.is_unsigned && (v.integer > kExact || v.integer < -kExact)))) {
      st.problem(v.field, "expected an integer between -2^53 and 2^53, found " + v.found);
      continue;
    }
    st.m.attributes.push_back({a.name, v.number, v.is_integer()});
  }
}

void check_nvrtc_options(const ManifestSource& s, CheckState& st) {
  st.m.nvrtc_options = option_list(st, s.nvrtc_options);
}

void check_guard_dtypes(const ManifestSource& s, CheckState& st) {
  if (!s.guard) return;  // reported by the schema
  for (const auto& v : s.guard->dtypes) {
    auto d = st.dtype_at(v, true);
    auto& dtypes = st.m.guard.dtypes;
    if (d && std::find(dtypes.begin(), dtypes.end(), *d) == dtypes.end()) dtypes.push_back(*d);
  }
  // Ranks are read here too: the symbol bindings are checked against them.
  st.m.guard.ranks = s.guard->ranks;
}

/// "nvrtc_options_for_dtype": {"bf16": ["-DENABLE_BF16"]}: options of the dtype's compile only.
void check_dtype_options(const ManifestSource& s, CheckState& st) {
  for (const auto& e : s.nvrtc_options_for_dtype) {
    auto d = st.dtype_at(e.dtype, true);
    if (!d) continue;
    const auto& dtypes = st.m.guard.dtypes;
    if (std::find(dtypes.begin(), dtypes.end(), *d) == dtypes.end()) {
      st.problem(e.dtype.field, quote_untrusted(e.dtype.text) +
                                    " is not in guard.dtypes: its options would never be used");
      continue;
    }
    st.m.nvrtc_options_for_dtype[*d] = option_list(st, e.options);
  }
}

namespace {

/// Why a symbol cannot take `name` ("" : it can).
std::string symbol_name_problem(const CheckState& st, const std::string& name) {
  const auto& fns = expr_function_names();
  if (std::find(fns.begin(), fns.end(), name) != fns.end())
    return quote_untrusted(name) + " is an expression function; choose another symbol name";
  if (st.m.attribute(name))
    return quote_untrusted(name) + " is also an attribute; a symbol needs its own name";
  if (is_builtin_symbol(name))
    return quote_untrusted(name) +
           " is a built-in symbol (the bytes of one element of the call's dtype); choose another "
           "symbol name";
  if (is_device_symbol(name))
    return quote_untrusted(name) +
           " is a built-in symbol (a property of the device the launch runs on); choose another "
           "symbol name";
  if (is_tensor_symbol_form(name))
    return quote_untrusted(name) +
           " has the form of a tensor symbol (numel_T, align_T, stride_T_D), which guard.require "
           "and when.if "
           "name for the call's tensors; choose another symbol name";
  return {};
}

}  // namespace

bool dimension_fits(CheckState& st, const Value& v) {
  if (!v.above_int64()) return true;
  st.problem(v.field, "dimension " + v.dump + " is out of range; expected " +
                          std::to_string(-kMaxRank) + " to " + std::to_string(kMaxRank - 1));
  return false;
}

void check_symbols(const ManifestSource& s, CheckState& st) {
  for (const auto& sym : s.symbols) {
    if (const std::string err = symbol_name_problem(st, sym.name); !err.empty()) {
      st.problem(sym.field, err);
      continue;
    }
    // Declared, even if its binding below is wrong: expressions naming it are not at fault.
    st.known_symbols.insert(sym.name);
    st.declared_symbols.push_back(sym.name);
    if (!sym.binding) continue;  // [TENSOR, DIM], DIM from -8 to 7: else the schema said
    const Value& dim_value = sym.binding->dim;
    if (!st.check_tensor_name(sym.binding->tensor) || !dimension_fits(st, dim_value)) continue;
    const int64_t dim = dim_value.integer;
    if (dim < -kMaxRank || dim >= kMaxRank) continue;
    bool ok = true;
    for (int rank : st.m.guard.ranks) {
      if (dim < -rank || dim >= rank) {
        st.problem(dim_value.field, "dimension " + std::to_string(dim) +
                                        " does not exist in a rank-" + std::to_string(rank) +
                                        " tensor (guard.ranks); expected " + std::to_string(-rank) +
                                        " to " + std::to_string(rank - 1));
        ok = false;
        break;
      }
    }
    if (ok) st.m.symbols.push_back({sym.name, sym.binding->tensor.text, static_cast<int>(dim)});
  }
}

/// guard.ranks applies to every tensor the symbols bind to. The op fixes each tensor's rank, so a
/// listed set that leaves one out puts every call outside the guard: the package would pass
/// without its kernels ever running.
void check_ranks_against_op(CheckState& st) {
  const auto& ranks = st.m.guard.ranks;
  if (!st.op || ranks.empty()) return;
  std::set<std::string> seen;
  for (const auto& s : st.m.symbols) {
    if (!seen.insert(s.tensor).second) continue;
    const TensorSpec* t = nullptr;
    for (const auto* list : {&st.op->inputs, &st.op->outputs})
      for (const auto& spec : *list)
        if (spec.name == s.tensor) t = &spec;
    if (!t) continue;
    const int rank = static_cast<int>(t->shape.size());
    if (std::find(ranks.begin(), ranks.end(), rank) != ranks.end()) continue;
    std::string listed;
    for (int r : ranks) listed += (listed.empty() ? "" : ", ") + std::to_string(r);
    st.problem(
        "guard.ranks",
        "[" + listed + "] leaves out rank " + std::to_string(rank) + ", the rank of op " +
            quote_untrusted(st.m.op) + "'s tensor " + quote_untrusted(s.tensor) +
            " (bound by symbol " + s.name +
            "): every call would fall outside the guard and the package's kernels would never "
            "run; list " +
            std::to_string(rank) + ", or leave guard.ranks out");
    return;
  }
}

void declare_expression_names(CheckState& st) {
  for (const auto& a : st.m.attributes)
    if (a.is_integer) st.known_symbols.insert(a.name);
  for (const auto& b : builtin_symbol_names()) st.known_symbols.insert(b);
  // Launches and workspaces may read the device's properties (the guard may not: check_guard).
  for (const auto& d : device_symbol_names()) st.known_symbols.insert(d);
}

void check_workspace(const ManifestSource& s, CheckState& st) {
  const auto tensors = st.op_tensor_names();
  for (const auto& w : s.workspace) {
    const std::string& field = w.field;
    Workspace ws;
    bool ok = true;
    if (w.name) {
      const std::string& name = *w.name;
      if (!is_identifier(name)) {  // the schema said
        ok = false;
      } else if (std::find(tensors.begin(), tensors.end(), name) != tensors.end()) {
        st.problem(sub(field, "name"), quote_untrusted(name) + " is a tensor of op " +
                                           quote_untrusted(st.m.op) +
                                           "; a workspace needs its own name");
        ok = false;
      } else if (st.workspace_names.count(name)) {
        st.problem(sub(field, "name"), "workspace " + quote_untrusted(name) + " is declared twice");
        ok = false;
      }
      ws.name = name;
    } else {
      ok = false;
    }
    if (!w.dtype) {
      ok = false;  // the schema said
    } else if (auto dt = st.dtype_at(*w.dtype, false)) {
      ws.dtype = *dt;
    } else {
      ok = false;
    }
    const std::size_t before = st.problems.size();
    for (const auto& e : w.shape.value_or(std::vector<Value>{}))
      if (auto x = st.expr_at(e)) ws.shape.push_back(*x);
    if (st.problems.size() != before) ok = false;
    // A size known now must be one memory can hold (2^64 bytes wrapped to a small number).
    int64_t elements = 1;
    bool known = ok;
    for (std::size_t d = 0; d < ws.shape.size() && ok; ++d) {
      const std::size_t seen = st.problems.size();
      const auto v = judge(st, ws.shape[d], at(sub(field, "shape"), d));
      if (st.problems.size() != seen) {
        ok = false;
      } else if (!v) {
        known = false;
      } else if (*v < 0) {
        st.problem(at(sub(field, "shape"), d), "a dimension is >= 0; found " + std::to_string(*v));
        ok = false;
      } else if (__builtin_mul_overflow(elements, *v, &elements)) {
        elements = std::numeric_limits<int64_t>::max();
      }
    }
    if (known && ok && workspace_too_big(elements, ws.dtype)) {
      st.problem(
          sub(field, "shape"),
          "the workspace would take more than 2^48 bytes (256 TiB), more than any GPU holds");
      ok = false;
    }
    if (w.zero) {
      if (w.zero->type == Value::Type::boolean) ws.zero = w.zero->boolean;
      else ok = false;  // the schema said
    }
    if (ws.zero) ws.start = 0.0;
    if (w.start) {
      const auto v = start_value(*w.start);
      if (!v) {
        ok = false;  // the schema said
      } else if (ws.zero && *v != 0) {
        st.problem(w.start->field, "\"zero\": true and \"start\": " + w.start->dump +
                                       " disagree; give one of them");
        ok = false;
      } else if (!whole_start(st, *v, ws.dtype, w.start->field,
                              "workspace " + quote_untrusted(ws.name))) {
        ok = false;
      } else {
        ws.start = *v;
      }
    }
    if (!ws.name.empty()) st.workspace_names.insert(ws.name);
    if (!ok) continue;
    st.m.workspace.push_back(std::move(ws));
    st.workspace_fields.push_back(field);
  }
}

/// "outputs": {"C": {"start": 0}}: outputs the kernel reads before it writes them.
void check_output_starts(const ManifestSource& s, CheckState& st) {
  for (const auto& o : s.outputs) {
    if (st.op) {
      const auto& outputs = st.op->outputs;
      const auto spec = std::find_if(outputs.begin(), outputs.end(),
                                     [&](const TensorSpec& t) { return t.name == o.name; });
      if (spec == outputs.end()) {
        std::vector<std::string> names;
        for (const auto& t : outputs) names.push_back(t.name);
        st.problem(o.field, "op " + quote_untrusted(st.m.op) + " has no output " +
                                quote_untrusted(o.name) + "; its outputs: " + join_capped(names));
        continue;
      }
      if (!spec->alias.empty()) {
        st.problem(
            o.field,
            "output " + quote_untrusted(o.name) + " is written in place into input " +
                quote_untrusted(spec->alias) +
                ": it holds that input's values, not a start value; remove it from \"outputs\"");
        continue;
      }
      if (!spec->dtype.empty() &&
          !whole_start(st, o.start, parse_dtype(spec->dtype), sub(o.field, "start"),
                       "output " + quote_untrusted(o.name)))
        continue;
    }
    st.m.output_start[o.name] = o.start;
  }
}

}  // namespace kgate::package::check
