// The launches of a decoded manifest (kernel names, grids, blocks, arguments, conditions) and its
// guard (shapes, layouts, captured variants, require); manifest_check.hpp lists the passes.
#include <algorithm>
#include <cmath>
#include <limits>
#include <regex>
#include <set>

#include "core/error.hpp"
#include "core/safe_text.hpp"
#include "runtime/package/device_props.hpp"
#include "runtime/package/manifest_check.hpp"

namespace kgate::package::check {
namespace {

using source::ArgSource;
using source::ExprList;
using source::LaunchSource;

/// Allowed characters of a kernel name expression: a C++ (template) name, nothing that ends the
/// expression NVRTC builds from it.
bool is_name_expression(const std::string& s) {
  static const std::regex re("[A-Za-z_:&(][A-Za-z0-9_:<>,.*&() -]{0,511}");
  return s.size() <= 512 && std::regex_match(s, re);
}

bool in_guard_dtypes(const CheckState& st, DType d) {
  const auto& dtypes = st.m.guard.dtypes;
  return std::find(dtypes.begin(), dtypes.end(), d) != dtypes.end();
}

void check_kernel(CheckState& st, const LaunchSource& l, Launch& launch) {
  const std::string kfield = sub(l.field, "kernel");
  if (!l.has_kernel) {
    st.problem(
        kfield,
        "missing; expected a kernel name expression such as \"softmax_rows<float>\", or an object "
        "of them per dtype such as {\"f32\": \"k<float>\"}");
    return;
  }
  const std::string name_expected =
      "a C++ kernel name (templates allowed: letters, digits, spaces and _ : < > , . * & ( ) -)";
  if (l.kernel) {
    if (!is_name_expression(l.kernel->text))
      st.problem(kfield, "expected " + name_expected + ", found " + l.kernel->found);
    else launch.kernel = l.kernel->text;
    return;
  }
  if (!l.kernel_per_dtype) return;  // the schema said
  for (const auto& [key, v] : l.kernel_for_dtype) {
    auto d = st.dtype_at(key, true);
    if (!d) continue;
    if (!in_guard_dtypes(st, *d)) {
      st.problem(v.field, "dtype " + quote_untrusted(key.text) + " is not in guard.dtypes");
      continue;
    }
    if (!v.is_string()) continue;  // the schema said
    // Checked again once for_each has replaced each {NAME}.
    if (!is_name_expression(v.text)) {
      st.problem(v.field, "expected " + name_expected + ", found " + v.found);
      continue;
    }
    launch.kernel_for_dtype[*d] = v.text;
  }
  for (DType d : st.m.guard.dtypes)
    if (!launch.kernel_for_dtype.count(d) &&
        std::find(l.kernel_keys.begin(), l.kernel_keys.end(), dtype_name(d)) == l.kernel_keys.end())
      st.problem(kfield, "no kernel for dtype " + quote_untrusted(dtype_name(d)) +
                             " of guard.dtypes; expected a name expression for every guard dtype");
}

/// A launch's grid or block (missing: a problem), or its cluster.
std::vector<Expr> expr_list(CheckState& st, const ExprList& list, const std::string& field,
                            bool required) {
  std::vector<Expr> out;
  if (!list && required)
    st.problem(field,
               "missing (in the launch or in launch_defaults); expected an array of 1 to 3 integer "
               "expressions such as [\"B\", 1, 1]");
  for (const auto& v : list.value_or(std::vector<Value>{}))
    if (auto e = st.expr_at(v)) out.push_back(*e);
  return out;
}

/// What a float expression may name: the shape symbols, every attribute (the manifest's and the
/// op's, integer or not) and the built-in symbols.
std::set<std::string, std::less<>> float_expression_names(const CheckState& st) {
  std::set<std::string, std::less<>> out = st.known_symbols;
  for (const auto& a : st.m.attributes) out.insert(a.name);
  if (st.op)
    for (const auto& [name, value] : st.op->attributes) out.insert(name);
  return out;
}

std::optional<ScalarType> arg_type(const ArgSource& a, bool integer_only) {
  // Missing, or not a type the argument's kind takes: the schema said.
  if (!a.type || (integer_only && !is_integer(*a.type))) return std::nullopt;
  return a.type;
}

/// Reads a stride argument's [TENSOR, DIM]; the dimension must exist in the op's tensor.
bool check_stride(CheckState& st, const ArgSource& a, KernelArg& arg) {
  if (!a.stride) return false;  // the schema said
  const Value& tensor = a.stride->tensor;
  const Value& dim_value = a.stride->dim;
  if (!st.check_tensor_name(tensor) || !dimension_fits(st, dim_value)) return false;
  const int64_t dim = dim_value.integer;
  int64_t rank = source::kMaxRank;
  std::string shape;
  if (st.op) {
    for (const auto* list : {&st.op->inputs, &st.op->outputs})
      for (const auto& t : *list)
        if (t.name == tensor.text) {
          rank = static_cast<int64_t>(t.shape.size());
          shape = join_capped(t.shape);
        }
  }
  if (dim < -rank || dim >= rank) {
    st.problem(dim_value.field,
               st.op ? "dimension " + std::to_string(dim) + " does not exist in " + tensor.text +
                           ":[" + shape + "] of op " + quote_untrusted(st.m.op) + "; expected " +
                           std::to_string(-rank) + " to " + std::to_string(rank - 1)
                     : "expected a dimension from -8 to 7, found " + dim_value.found);
    return false;
  }
  arg.name = tensor.text;
  arg.dim = static_cast<int>(dim);
  return true;
}

bool scalar_fits(CheckState& st, const Value& v, ScalarType t, KernelArg& arg) {
  if (!is_integer(t)) {
    arg.float_value = v.number;
    if (t == ScalarType::f32 && std::abs(arg.float_value) > std::numeric_limits<float>::max()) {
      st.problem(v.field, v.found + " does not fit in f32");
      return false;
    }
    return true;
  }
  int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  if (t == ScalarType::i32)
    lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  if (t == ScalarType::u32) lo = 0, hi = std::numeric_limits<uint32_t>::max();
  if (t == ScalarType::u64) lo = 0;
  const std::string expected = "expected an integer from " + std::to_string(lo) + " to " +
                               std::to_string(hi) + " for type " + scalar_type_name(t) +
                               ", found " + v.found;
  if (!v.is_integer() || (v.is_unsigned && v.unsigned_value > static_cast<uint64_t>(hi)) ||
      v.integer < lo || v.integer > hi) {
    st.problem(v.field, expected);
    return false;
  }
  arg.int_value = v.integer;
  return true;
}

/// {"attribute": NAME, "type": T}: an attribute the manifest pins, or one of the op's that the
/// kernel takes as the call gives it (e.g. layer_norm's eps).
bool check_attribute_arg(CheckState& st, const ArgSource& a, KernelArg& arg) {
  auto t = arg_type(a, false);
  const Value& v = a.value;
  if (!v.is_string()) return false;  // the schema said
  const std::string& name = v.text;
  const Attribute* attr = st.m.attribute(name);
  const bool of_op = !attr && st.op && st.op->attributes.count(name);
  // No op to ask (its problem, an unknown op or an op file that did not load, is reported
  // already): an attribute it may have is not a second problem.
  if (!attr && !st.op) return false;
  if (!attr && !of_op) {
    std::vector<std::string> names;
    for (const auto& x : st.m.attributes) names.push_back(x.name);
    for (const auto& [n, d] : st.op->attributes)
      if (!st.m.attribute(n)) names.push_back(n);
    st.problem(v.field,
               "expected the name of an attribute of the op or one declared in \"attributes\" (" +
                   (names.empty() ? std::string("none") : join_capped(names)) + "), found " +
                   v.found);
    return false;
  }
  if (!t) return false;
  const double op_default = attr ? 0 : st.op->attributes.at(name);
  const bool integer_value = attr ? attr->is_integer : std::floor(op_default) == op_default;
  if (is_integer(*t) && !integer_value) {
    st.problem(sub(a.field, "type"),
               "attribute " + quote_untrusted(name) + " is not an integer; expected f32 or f64");
    return false;
  }
  arg.kind = KernelArg::Kind::attribute;
  arg.name = name;
  arg.type = *t;
  return true;
}

/// {"scalar": "1 / sqrt(D)", "type": "f32"}: a float expression of the call.
bool check_float_expression_arg(CheckState& st, const ArgSource& a, KernelArg& arg) {
  auto t = arg_type(a, false);
  if (!t) return false;
  if (is_integer(*t)) {
    st.problem(sub(a.field, "type"),
               "a float expression is passed as f32 or f64; an integer value is {\"shape\": " +
                   quote_untrusted(a.value.text) +
                   ", \"type\": " + quote_untrusted(scalar_type_name(*t)) + "}");
    return false;
  }
  try {
    FloatExpr e = FloatExpr::parse(a.value.text);
    e.check_symbols(float_expression_names(st));
    arg.float_expr = std::move(e);
  } catch (const Error& e) {
    st.problem(a.value.field, e.what());
    return false;
  }
  arg.kind = KernelArg::Kind::scalar;
  arg.type = *t;
  return true;
}

/// A pointer argument: an op tensor or a declared workspace.
bool check_pointer_arg(CheckState& st, const ArgSource& a, KernelArg& arg) {
  const Value& v = a.value;
  if (a.has_type) {
    st.problem(sub(a.field, "type"),
               "a " + a.kind + " argument is passed as a pointer; remove \"type\"");
    return false;
  }
  if (a.kind == "tensor") {
    if (!st.check_tensor_name(v)) return false;
    arg.kind = KernelArg::Kind::tensor;
  } else {
    if (!v.is_string()) return false;  // the schema said
    if (!st.workspace_names.count(v.text)) {
      std::vector<std::string> names(st.workspace_names.begin(), st.workspace_names.end());
      st.problem(v.field, "expected the name of a tensor declared in \"workspace\" (" +
                              (names.empty() ? std::string("none declared") : join_capped(names)) +
                              "), found " + v.found);
      return false;
    }
    arg.kind = KernelArg::Kind::workspace;
  }
  arg.name = v.text;
  return true;
}

void check_arg(CheckState& st, const ArgSource& a, Launch& launch) {
  KernelArg arg;
  const Value& v = a.value;
  bool ok = false;
  if (a.kind == "tensor" || a.kind == "workspace") {
    ok = check_pointer_arg(st, a, arg);
  } else if (a.kind == "shape") {
    auto e = st.expr_at(v);
    auto t = arg_type(a, true);
    ok = e && t;
    if (ok) {
      arg.kind = KernelArg::Kind::shape;
      arg.value = *e;
      arg.type = *t;
    }
  } else if (a.kind == "attribute") {
    ok = check_attribute_arg(st, a, arg);
  } else if (a.kind == "stride") {
    auto t = arg_type(a, true);
    ok = check_stride(st, a, arg) && t;
    if (ok) {
      arg.kind = KernelArg::Kind::stride;
      arg.type = *t;
    }
  } else if (v.is_string()) {
    ok = check_float_expression_arg(st, a, arg);
  } else {
    auto t = arg_type(a, false);
    if (!v.is_number() || !t) return;  // the schema said
    arg.kind = KernelArg::Kind::scalar;
    arg.type = *t;
    ok = scalar_fits(st, v, *t, arg);
  }
  if (ok) launch.args.push_back(arg);
}

void check_when(CheckState& st, const source::WhenSource& w, Launch& launch) {
  if (w.if_expr)
    if (auto x = st.expr_at(*w.if_expr, true)) launch.when.if_expr = *x;
  if (w.layouts) launch.when.layouts = *w.layouts;
}

}  // namespace

void check_launches(const ManifestSource& s, CheckState& st) {
  for (const auto& [field, message] : s.expansion_problems) st.problem(field, message);
  for (const auto& l : s.launches) {
    Launch launch;
    check_kernel(st, l, launch);
    launch.grid = expr_list(st, l.grid, sub(l.field, "grid"), true);
    launch.block = expr_list(st, l.block, sub(l.field, "block"), true);
    if (l.shared_mem)
      if (auto e = st.expr_at(*l.shared_mem)) launch.shared_mem = *e;
    if (l.max_dynamic_shared_mem)
      launch.max_dynamic_shared_mem = st.expr_at(*l.max_dynamic_shared_mem);
    launch.carveout = l.carveout;
    if (l.cluster) launch.cluster = expr_list(st, l.cluster, sub(l.field, "cluster"), false);
    launch.cooperative = l.cooperative;
    launch.pdl = l.pdl;
    if (!l.has_args)
      st.problem(sub(l.field, "args"),
                 "missing; expected an array of kernel arguments in parameter order, such as "
                 "[{\"tensor\": \"x\"}]");
    for (const auto& a : l.args) check_arg(st, a, launch);
    if (l.when) check_when(st, *l.when, launch);
    for (const auto& a : l.assumes.value_or(std::vector<Value>{}))
      if (auto e = st.expr_at(a, true)) launch.assumes.push_back(*e);
    if (l.nvrtc_options) launch.nvrtc_options = option_list(st, *l.nvrtc_options);
    check_launch_settings(st, launch, l.field);
    launch.field = l.field;
    st.m.launches.push_back(std::move(launch));
  }
}

namespace {

void check_shapes(const source::GuardSource& g, CheckState& st) {
  for (const auto& r : g.shapes) {
    if (!st.is_symbol(r.symbol)) {
      st.problem(r.field, "unknown symbol " + quote_untrusted(r.symbol) +
                              "; expected one of \"symbols\": " + st.symbol_list());
      continue;
    }
    if (!r.is_object) continue;  // the schema said
    // Either bound may be left out: it is then the op's (the symbol's domain), as is the other.
    int64_t domain_lo = 0, domain_hi = std::numeric_limits<int64_t>::max() / 4;
    if (st.op)
      for (const auto& d : st.op->symbols)
        if (d.name == r.symbol) {
          domain_lo = d.min;
          domain_hi = d.max;
        }
    const auto lo = r.has_min ? r.min : std::optional<int64_t>(domain_lo);
    const auto hi = r.has_max ? r.max : std::optional<int64_t>(domain_hi);
    if (!lo || !hi) continue;
    if (*lo > *hi) {
      st.problem(r.field, "min " + std::to_string(*lo) + " is greater than max " +
                              std::to_string(*hi) + "; expected min <= max");
      continue;
    }
    st.m.guard.shapes[r.symbol] = {*lo, *hi, r.multiple_of.value_or(1)};
  }
}

/// One dimension of a captured variant: a symbol's value inside guard.shapes.
bool check_variant_dim(CheckState& st, const source::VariantSource::Dim& d, Variant& var) {
  if (!st.is_symbol(d.symbol)) {
    st.problem(d.field, "unknown symbol " + quote_untrusted(d.symbol) +
                            "; expected one of \"symbols\": " + st.symbol_list());
    return false;
  }
  if (!d.value) return false;  // the schema said
  const int64_t x = *d.value;
  auto r = st.m.guard.shapes.find(d.symbol);
  if (r != st.m.guard.shapes.end() && (x < r->second.min || x > r->second.max)) {
    st.problem(d.field, std::to_string(x) + " is outside guard.shapes." + d.symbol + " [" +
                            std::to_string(r->second.min) + ", " + std::to_string(r->second.max) +
                            "]");
    return false;
  }
  if (r != st.m.guard.shapes.end() && x % r->second.multiple_of != 0) {
    st.problem(d.field, std::to_string(x) + " is not a multiple of " +
                            std::to_string(r->second.multiple_of) + " (guard.shapes." + d.symbol +
                            ".multiple_of)");
    return false;
  }
  var.dims[d.symbol] = x;
  return true;
}

void check_variants(const source::GuardSource& g, CheckState& st) {
  if (!g.has_variants) return;
  if (g.variant_count > kMaxVariants) {
    st.problem("guard.variants", "lists " + std::to_string(g.variant_count) +
                                     " variants; expected at most " + std::to_string(kMaxVariants));
    return;
  }
  for (const auto& v : g.variants) {
    Variant var;
    bool ok = v.has_dims;  // else the schema said
    for (const auto& d : v.dims) ok = check_variant_dim(st, d, var) && ok;
    if (v.has_dims) {
      // A captured call has a value for every symbol.
      std::vector<std::string> missing;
      for (const auto& name : st.declared_symbols)
        if (std::find(v.dim_keys.begin(), v.dim_keys.end(), name) == v.dim_keys.end())
          missing.push_back(name);
      if (!missing.empty()) {
        st.problem(sub(v.field, "dims"),
                   "no value for " + join_capped(missing) +
                       "; expected a value for every symbol: " + st.symbol_list());
        ok = false;
      }
    }
    if (!v.dtype) {
      ok = false;  // the schema said
    } else if (auto dt = st.dtype_at(*v.dtype, true)) {
      if (!in_guard_dtypes(st, *dt)) {
        st.problem(v.dtype->field,
                   "dtype " + quote_untrusted(dtype_name(*dt)) + " is not in guard.dtypes");
        ok = false;
      }
      var.dtype = *dt;
    } else {
      ok = false;
    }
    // A call count of a captured workload; the sum over every variant stays far inside int64.
    if (v.calls && *v.calls <= kMaxVariantCalls)  // (the schema's bounds)
      var.calls = *v.calls;
    else ok = false;
    if (ok) st.m.guard.variants.push_back(std::move(var));
  }
}

void check_require(const source::GuardSource& g, CheckState& st) {
  for (const auto& r : g.require) {
    auto e = st.expr_at(r, true);
    if (!e) continue;
    if (reads_device(*e)) {
      st.problem(r.field, "\"" + e->text() +
                              "\" reads a device property: the guard says where the package may be "
                              "used, on any GPU; a launch's \"when\": {\"if\": ...} picks launches "
                              "per device");
      continue;
    }
    if (e->is_constant()) {
      if (const auto v = judge(st, *e, r.field))
        st.problem(r.field,
                   "\"" + e->text() + "\" names no symbol, so it is always " +
                       (*v != 0 ? "true: remove it" : "false: nothing would be inside the guard"));
    } else {
      judge(st, *e, r.field);
      st.m.guard.require.push_back(std::move(*e));
    }
  }
}

}  // namespace

void check_guard(const ManifestSource& s, CheckState& st) {
  if (!s.guard) return;  // the schema said
  check_shapes(*s.guard, st);
  if (s.guard->layouts) st.m.guard.layouts = *s.guard->layouts;
  check_variants(*s.guard, st);
  check_require(*s.guard, st);
  st.m.guard.unmatched_fallback = s.guard->unmatched_fallback;
}

/// A launch that names a layout outside guard.layouts would never run for it: a mistake.
void check_when_layouts(CheckState& st) {
  const auto& g = st.m.guard.layouts;
  if (g.empty()) return;  // guard.layouts itself is wrong: reported there
  for (const auto& l : st.m.launches) {
    const auto& layouts = l.when.layouts;
    for (std::size_t j = 0; j < layouts.size(); ++j) {
      if (std::find(g.begin(), g.end(), layouts[j]) != g.end()) continue;
      std::vector<std::string> names;
      for (Layout x : g) names.push_back(layout_name(x));
      st.problem(at(sub(l.field, "when.layouts"), j),
                 std::string("layout ") + layout_name(layouts[j]) + " is not in guard.layouts [" +
                     join_capped(names) +
                     "]: calls of that layout fall back to the reference, so the launch never runs "
                     "for them; add it "
                     "to guard.layouts or remove it here");
    }
  }
}

void check_outputs_bound(const ManifestSource& s, CheckState& st) {
  if (!st.op || s.launches_incomplete) return;
  std::set<std::string> passed;
  for (const auto& l : st.m.launches)
    for (const auto& a : l.args)
      if (a.kind == KernelArg::Kind::tensor) passed.insert(a.name);
  for (const auto& t : st.op->outputs)
    if (!passed.count(t.name))
      st.problem("launches", "output " + quote_untrusted(t.name) + " of op " +
                                 quote_untrusted(st.m.op) +
                                 " is never passed to a kernel; expected {\"tensor\": " +
                                 quote_untrusted(t.name) + "} in some launch's args");
}

}  // namespace kgate::package::check
