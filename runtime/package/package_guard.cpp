// The guard of a package (which calls and cases it takes, and why not), the launches a case runs,
// its boundary cases and the sizes its manifest names (ragged edges).
#include "runtime/package/package_kernel.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "core/cuda_limits.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/rng.hpp"
#include "core/sha256.hpp"
#include "gates/props/guard_cases.hpp"
#include "runtime/cuda/check.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/cuda/driver.hpp"
#include "runtime/package/compiled_package.hpp"
#include "runtime/package/device_props.hpp"
#include "runtime/package/package_internal.hpp"

namespace kgate::package {

namespace {

/// The first of `predicates` (written at `field`: "guard.require", "launches[0].assumes") that is
/// 0 for `values`, said with the values of the symbols it names: `guard.require[0] "B * N % 8 ==
/// 0" is 0 (B=3, N=7)`; or one that cannot be evaluated. "" when every one holds.
std::string first_false(const std::vector<Expr>& predicates, const std::string& field,
                        const SymbolValues& values) {
  for (std::size_t i = 0; i < predicates.size(); ++i) {
    const Expr& p = predicates[i];
    const std::string at = field + "[" + std::to_string(i) + "] \"" + p.text() + "\"";
    std::string shown;  // the values of the symbols it names
    for (const auto& s : p.symbols())
      if (auto it = values.find(s); it != values.end())
        shown += (shown.empty() ? "" : ", ") + s + "=" + std::to_string(it->second);
    try {
      if (p.evaluate(values) == 0) return at + " is 0 (" + shown + ")";
    } catch (const Error& e) {
      return at + " cannot be evaluated (" + e.what() + ")";
    }
  }
  return {};
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

bool in_dtypes(const Guard& guard, DType d) {
  return std::find(guard.dtypes.begin(), guard.dtypes.end(), d) != guard.dtypes.end();
}

/// Row-major strides of `sizes` (a dimension of size 0 counts as 1, as in PyTorch).
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  int64_t s = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(sizes[i], 1);
  }
  return strides;
}

/// The largest power of two, at most kMaxAlignSymbol, dividing `bytes` (0: kMaxAlignSymbol).
int64_t alignment_of(uint64_t bytes) {
  if (bytes == 0) return kMaxAlignSymbol;
  return std::min<int64_t>(kMaxAlignSymbol, static_cast<int64_t>(bytes & (~bytes + 1)));
}

void put_tensor_values(SymbolValues& out, const std::string& name, int64_t numel, int64_t align,
                       const std::vector<int64_t>& strides) {
  out["numel_" + name] = numel;
  out["align_" + name] = align;
  for (std::size_t d = 0; d < strides.size(); ++d)
    out["stride_" + name + "_" + std::to_string(d)] = strides[d];
}

/// Whether the guard reads the call's tensor symbols: its require predicates do, and so may the
/// launches' when.if it evaluates for "unmatched": "fallback". Other guards skip building them (a
/// map per call, on the path of every launch).
bool guard_reads_tensors(const Guard& g) { return !g.require.empty() || g.unmatched_fallback; }

/// The values guard.require and when.if see: the shape symbols, integer attributes, dtype_size
/// and the tensor symbols.
SymbolValues predicate_values(const PackageManifest& manifest, DType dtype,
                              const std::map<std::string, int64_t>& dims,
                              const SymbolValues& tensors) {
  SymbolValues values(dims.begin(), dims.end());
  for (const auto& a : manifest.attributes)
    if (a.is_integer) values[a.name] = static_cast<int64_t>(a.value);
  values[kDtypeSizeSymbol] = static_cast<int64_t>(dtype_size(dtype));
  for (const auto& [k, v] : tensors) values[k] = v;
  if (manifest.reads_device)
    put_device_values(values, device_props_in_effect());  // (a when.if may read them)
  return values;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The guard

SymbolValues call_tensor_values(const OpSignature& op, const KernelCall& call) {
  SymbolValues out;
  auto visit = [&](const TensorSpec& spec, const TensorView& t) {
    put_tensor_values(out, spec.name, t.numel(), alignment_of(reinterpret_cast<uintptr_t>(t.data)),
                      t.strides);
  };
  for (std::size_t i = 0; i < op.inputs.size() && i < call.inputs.size(); ++i)
    visit(op.inputs[i], call.inputs[i]);
  for (std::size_t i = 0; i < op.outputs.size() && i < call.outputs.size(); ++i)
    visit(op.outputs[i], call.outputs[i]);
  return out;
}

SymbolValues case_tensor_values(const OpSignature& op, const Case& c) {
  SymbolValues out;
  const SymbolValues dims = symbol_values(c.dims);
  std::vector<std::pair<int64_t, std::vector<int64_t>>> inputs;  // align, strides
  auto sizes_of = [&](const TensorSpec& t) {
    std::vector<int64_t> sizes;
    for (const auto& e : t.shape) sizes.push_back(evaluate_expr(e, dims));
    return sizes;
  };
  auto numel_of_sizes = [](const std::vector<int64_t>& sizes) {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return n;
  };
  for (const auto& t : op.inputs) {
    const auto sizes = sizes_of(t);
    const int64_t elem = static_cast<int64_t>(dtype_size(op.tensor_dtype(t, c.dtype)));
    std::vector<int64_t> strides = row_major_strides(sizes);
    int64_t align = kMaxAlignSymbol;
    switch (c.layout) {
      case kgate::Layout::contiguous:
        break;
      case kgate::Layout::strided:  // every other element of a buffer twice as wide
        if (!sizes.empty()) {
          auto wide = sizes;
          wide.back() *= 2;
          strides = row_major_strides(wide);
          strides.back() = 2;
        }
        break;
      case kgate::Layout::offset:  // one element in
        align = alignment_of(static_cast<uint64_t>(elem));
        break;
      case kgate::Layout::padded:  // rows kPaddedLayoutElements longer (rank >= 2)
        if (sizes.size() >= 2) {
          auto wide = sizes;
          wide.back() += kPaddedLayoutElements;
          strides = row_major_strides(wide);
        }
        break;
      case kgate::Layout::offset16:  // 16 bytes in
        align = alignment_of(static_cast<uint64_t>(std::max<int64_t>(16, elem)));
        break;
    }
    put_tensor_values(out, t.name, numel_of_sizes(sizes), align, strides);
    inputs.emplace_back(align, strides);
  }
  for (const auto& t : op.outputs) {
    if (const int k = op.alias_input(t); k >= 0) {  // written in place: the input's view
      const auto& [align, strides] = inputs[static_cast<std::size_t>(k)];
      put_tensor_values(out, t.name, numel_of_sizes(sizes_of(t)), align, strides);
      continue;
    }
    const auto sizes = sizes_of(t);
    put_tensor_values(out, t.name, numel_of_sizes(sizes), kMaxAlignSymbol,
                      row_major_strides(sizes));
  }
  return out;
}

Layout to_package_layout(kgate::Layout layout) {
  switch (layout) {
    case kgate::Layout::contiguous:
      return Layout::contiguous;
    case kgate::Layout::strided:
      return Layout::strided;
    case kgate::Layout::offset:
      return Layout::offset;
    case kgate::Layout::padded:  // not contiguous
      return Layout::strided;
    case kgate::Layout::offset16:  // contiguous and 16-byte aligned
      return Layout::contiguous;
  }
  return Layout::contiguous;
}

Layout call_layout(const KernelCall& call) {
  bool misaligned = false;
  auto visit = [&](const TensorView& t) {
    if (!t.is_contiguous()) return true;
    if (t.numel() > 0 && !aligned16(t.data)) misaligned = true;
    return false;
  };
  for (const auto& t : call.inputs)
    if (visit(t)) return Layout::strided;
  for (const auto& t : call.outputs)
    if (visit(t)) return Layout::strided;
  return misaligned ? Layout::offset : Layout::contiguous;
}

std::string guard_violation(const PackageManifest& manifest, DType dtype,
                            const std::map<std::string, int64_t>& dims, Layout layout, int rank,
                            const SymbolValues& tensors) {
  const Guard& g = manifest.guard;
  if (!in_dtypes(g, dtype)) {
    std::vector<std::string> names;
    for (DType d : g.dtypes) names.push_back(dtype_name(d));
    return std::string("dtype ") + dtype_name(dtype) + " is not in guard.dtypes " +
           internal::list_of(names);
  }
  if (auto r = internal::rank_violation(g, rank); !r.empty()) return r;
  if (std::find(g.layouts.begin(), g.layouts.end(), layout) == g.layouts.end()) {
    std::vector<std::string> names;
    for (Layout l : g.layouts) names.push_back(layout_name(l));
    return std::string("layout ") + layout_name(layout) + " is not in guard.layouts " +
           internal::list_of(names);
  }
  for (const auto& s : manifest.symbols) {
    auto range = g.shapes.find(s.name);
    if (range == g.shapes.end()) continue;
    auto it = dims.find(s.name);
    if (it == dims.end()) return "symbol " + s.name + " has no value";
    const int64_t v = it->second;
    const ShapeRange& r = range->second;
    const std::string at = s.name + "=" + std::to_string(v);
    const std::string field = "guard.shapes." + s.name;
    if (v < r.min) return at + " is below " + field + ".min=" + std::to_string(r.min);
    if (v > r.max) return at + " is above " + field + ".max=" + std::to_string(r.max);
    if (r.multiple_of > 1 && v % r.multiple_of != 0)
      return at + " is not a multiple of " + field +
             ".multiple_of=" + std::to_string(r.multiple_of);
  }
  if (g.require.empty() && !g.unmatched_fallback) return {};
  const SymbolValues values = predicate_values(manifest, dtype, dims, tensors);
  if (std::string why = first_false(g.require, "guard.require", values); !why.empty()) return why;
  if (g.unmatched_fallback &&
      !manifest.launches.empty()) {  // no launch for the call: the reference runs
    bool any = false;
    for (const auto& l : manifest.launches) {
      try {
        any = any || launch_runs(l, values, layout);
      } catch (const Error&) {
        any = true;  // the planner reports the expression's error
      }
    }
    if (!any) return "no launch's \"when\" matches the call (guard.unmatched: fallback)";
  }
  return {};
}

std::map<std::string, std::string> op_symbols_of(const PackageManifest& manifest,
                                                 const OpSignature& op) {
  std::map<std::string, std::string> out;
  for (const auto& s : manifest.symbols) {
    const internal::TensorRef t = internal::find_tensor(op, s.tensor);
    if (!t.spec) continue;
    const int d = internal::resolve_dim(s.dim, static_cast<int64_t>(t.spec->shape.size()));
    if (d < 0) continue;
    out[s.name] = t.spec->shape[static_cast<std::size_t>(d)];
  }
  return out;
}

namespace {

bool case_has(const Case& c, const std::string& name) {
  for (const auto& [n, v] : c.dims)
    if (n == name) return true;
  return false;
}

}  // namespace

std::vector<CaseLaunch> case_launches(const PackageManifest& manifest, const OpSignature& op,
                                      const Case& c) {
  SymbolValues values;
  for (const auto& [name, v] : case_symbol_values(manifest, op, c)) values[name] = v;
  for (const auto& a : manifest.attributes)
    if (a.is_integer) values[a.name] = static_cast<int64_t>(a.value);
  values[kDtypeSizeSymbol] = static_cast<int64_t>(dtype_size(c.dtype));
  for (const auto& [k, v] : case_tensor_values(op, c)) values[k] = v;
  if (manifest.reads_device) put_device_values(values, device_props_in_effect());
  const Layout layout = to_package_layout(c.layout);
  std::vector<CaseLaunch> out;
  for (const auto& l : manifest.launches) {
    CaseLaunch r;
    r.field = l.field;
    r.kernel = l.kernel_name(c.dtype);
    const auto eval = [&](const Expr& e, const std::string& field) -> int64_t {
      try {
        return e.evaluate(values);
      } catch (const Error& err) {
        if (r.error.empty()) r.error = field + " \"" + e.text() + "\": " + err.what();
        return 0;
      }
    };
    if (!l.when.layouts.empty() &&
        std::find(l.when.layouts.begin(), l.when.layouts.end(), layout) == l.when.layouts.end())
      continue;
    if (l.when.if_expr && eval(*l.when.if_expr, l.field + ".when.if") == 0 && r.error.empty())
      continue;
    for (std::size_t d = 0; d < 3; ++d) {
      r.grid[d] =
          d < l.grid.size() ? eval(l.grid[d], l.field + ".grid[" + std::to_string(d) + "]") : 1;
      r.block[d] =
          d < l.block.size() ? eval(l.block[d], l.field + ".block[" + std::to_string(d) + "]") : 1;
      r.cluster[d] = d < l.cluster.size()
                         ? eval(l.cluster[d], l.field + ".cluster[" + std::to_string(d) + "]")
                         : (l.cluster.empty() ? 0 : 1);
    }
    r.shared_mem = eval(l.shared_mem, l.field + ".shared_mem");
    if (l.max_dynamic_shared_mem)
      r.max_dynamic_shared_mem =
          eval(*l.max_dynamic_shared_mem, l.field + ".max_dynamic_shared_mem");
    r.violated = launch_assumption_violation(l, values);
    r.pdl = l.pdl;
    out.push_back(std::move(r));
  }
  return out;
}

std::string launch_assumption_violation(const Launch& l, const SymbolValues& values) {
  return first_false(l.assumes, l.field + ".assumes", values);
}

std::string describe(const CaseLaunch& l) {
  std::string out = l.field + " " + l.kernel + ": ";
  if (!l.error.empty()) return out + "cannot be evaluated: " + l.error;
  const auto dim = [](const std::array<int64_t, 3>& v) {
    return std::to_string(v[0]) + "x" + std::to_string(v[1]) + "x" + std::to_string(v[2]);
  };
  out += "grid " + dim(l.grid) + ", block " + dim(l.block) + ", " + std::to_string(l.shared_mem) +
         " bytes of dynamic shared memory";
  if (l.max_dynamic_shared_mem) out += " (limit " + std::to_string(*l.max_dynamic_shared_mem) + ")";
  if (l.cluster[0] > 0) out += ", cluster " + dim(l.cluster);
  return out;
}

std::vector<std::string> case_launch_problems(const PackageManifest& manifest,
                                              const OpSignature& op, const Case& c,
                                              const DeviceProps& props) {
  std::vector<std::string> out;
  const std::vector<CaseLaunch> launches = case_launches(manifest, op, c);
  // No launch is needed where every output is empty (the planner launches nothing then either).
  bool outputs_empty = true;
  const SymbolValues tensors = case_tensor_values(op, c);
  for (const auto& o : op.outputs)
    if (const auto it = tensors.find("numel_" + o.name); it == tensors.end() || it->second != 0)
      outputs_empty = false;
  if (launches.empty() && !manifest.launches.empty() && !manifest.guard.unmatched_fallback &&
      !outputs_empty)
    out.push_back(
        "no launch runs for this call inside the guard, so its outputs would stay unwritten; widen "
        "a "
        "launch's \"when\", or set guard.unmatched to \"fallback\"");
  for (const auto& l : launches) {
    const std::string at = l.field + " (" + l.kernel + ")";
    if (!l.error.empty()) {
      out.push_back(at + ": " + l.error);
      continue;
    }
    if (!l.violated.empty())
      out.push_back(at + ": " + l.violated +
                    ": the guard is wider than the specialization this launch's binary was "
                    "compiled for; add the assumption to guard.require (or to this launch's "
                    "\"when\")");
    const int64_t threads = l.block[0] * l.block[1] * l.block[2];
    if (threads > props.threads_per_block)
      out.push_back(at + ": a block of " + std::to_string(threads) + " threads, more than the " +
                    std::to_string(props.threads_per_block) + " the device allows");
    const int64_t limit = l.max_dynamic_shared_mem ? *l.max_dynamic_shared_mem : l.shared_mem;
    if (std::max(limit, l.shared_mem) > props.smem_per_block_optin)
      out.push_back(at + ": " + std::to_string(std::max(limit, l.shared_mem)) +
                    " bytes of dynamic shared memory, more than the " +
                    std::to_string(props.smem_per_block_optin) +
                    " a block can opt in to on this device");
    if (l.pdl && props.arch < 90)
      out.push_back(at +
                    ": a programmatic dependent launch (\"pdl\"), which needs sm_90 or later; "
                    "the device is sm_" +
                    std::to_string(props.arch));
    if (l.cluster[0] > 0 && props.arch < 90)
      out.push_back(at + ": a thread-block cluster, which needs sm_90 or later; the device is sm_" +
                    std::to_string(props.arch));
  }
  return out;
}

std::vector<std::string> case_float_scalars(const PackageManifest& manifest, const OpSignature& op,
                                            const Case& c) {
  std::vector<std::string> out;
  FloatValues values;
  for (const auto& [name, v] : c.dims) values[name] = static_cast<double>(v);
  for (const auto& [name, v] : op.attributes) values[name] = v;
  for (const auto& a : manifest.attributes) values[a.name] = a.value;
  for (const auto& [name, v] : case_symbol_values(manifest, op, c))
    values[name] = static_cast<double>(v);
  values[kDtypeSizeSymbol] = static_cast<double>(dtype_size(c.dtype));
  if (manifest.reads_device) put_device_values(values, device_props_in_effect());
  for (const auto& l : manifest.launches)
    for (std::size_t i = 0; i < l.args.size(); ++i) {
      const KernelArg& a = l.args[i];
      if (!a.float_expr) continue;
      std::string value;
      try {
        const double v = a.float_expr->evaluate(values);
        value = a.type == ScalarType::f32 ? format_number(static_cast<float>(v), "%.9g")
                                          : format_number(v, "%.17g");
      } catch (const Error& e) {
        value = std::string("(") + e.what() + ")";
      }
      out.push_back(l.field + ".args[" + std::to_string(i) + "] \"" + a.float_expr->text() +
                    "\" = " + value + " as " + scalar_type_name(a.type));
    }
  return out;
}

std::map<std::string, int64_t> case_symbol_values(const PackageManifest& manifest,
                                                  const OpSignature& op, const Case& c) {
  std::map<std::string, int64_t> out;
  const SymbolValues dims = symbol_values(c.dims);
  for (const auto& [symbol, op_dim] : op_symbols_of(manifest, op)) {
    if (case_has(c, op_dim)) {
      out[symbol] = c.dim(op_dim);
      continue;
    }
    // A dimension the op writes as an expression of its symbols ("2*D2"): its value for the case,
    // as the call's tensor will have it.
    try {
      out[symbol] = evaluate_expr(op_dim, dims);
    } catch (const Error&) {
      // not an expression of the case's symbols: left out
    }
  }
  return out;
}

std::string case_guard_violation(const PackageManifest& manifest, const OpSignature& op,
                                 const Case& c) {
  // The rank of every tensor the symbols bind to (of the first input when there are none).
  std::vector<int64_t> ranks;
  for (const auto& s : manifest.symbols)
    if (const internal::TensorRef t = internal::find_tensor(op, s.tensor); t.spec)
      ranks.push_back(static_cast<int64_t>(t.spec->shape.size()));
  if (ranks.empty() && !op.inputs.empty())
    ranks.push_back(static_cast<int64_t>(op.inputs[0].shape.size()));
  const int rank = ranks.empty() ? 0 : static_cast<int>(ranks.front());
  const std::string why = guard_violation(
      manifest, c.dtype, case_symbol_values(manifest, op, c), to_package_layout(c.layout), rank,
      guard_reads_tensors(manifest.guard) ? case_tensor_values(op, c) : SymbolValues{});
  if (!why.empty()) return why;
  for (int64_t r : ranks)
    if (auto v = internal::rank_violation(manifest.guard, r); !v.empty()) return v;
  return {};
}

bool inside_guard(const PackageManifest& manifest, const OpSignature& op, const Case& c) {
  return case_guard_violation(manifest, op, c).empty();
}

namespace {}  // namespace

std::string call_guard_violation(const PackageManifest& manifest, const OpSignature& op,
                                 const KernelCall& call) {
  std::map<std::string, int64_t> dims;
  int rank = 0;
  if (auto why = internal::bind_call_symbols(manifest, op, call, dims, rank); !why.empty())
    return why;
  const DType dtype = call.inputs.empty() ? DType::f32 : call.inputs[0].dtype;
  if (auto why = guard_violation(
          manifest, dtype, dims, call_layout(call), rank,
          guard_reads_tensors(manifest.guard) ? call_tensor_values(op, call) : SymbolValues{});
      !why.empty())
    return why;
  for (const auto& a : manifest.attributes) {
    auto it = call.attributes.find(a.name);
    if (it == call.attributes.end())
      return "attribute " + a.name + " is not set by the call (the package needs attributes." +
             a.name + "=" + internal::number(a.value) + ")";
    if (it->second != a.value)
      return "attribute " + a.name + "=" + internal::number(it->second) +
             " differs from the package's attributes." + a.name + "=" + internal::number(a.value);
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// Cases

GuardModel guard_model_of(const PackageManifest& manifest, const OpSignature& op) {
  GuardModel g;
  g.name = manifest.name;
  const auto op_symbol = op_symbols_of(manifest, op);
  for (const auto& [ms, os] : op_symbol) {
    auto r = manifest.guard.shapes.find(ms);
    if (r != manifest.guard.shapes.end())
      g.shapes.push_back({os, r->second.min, r->second.max, r->second.multiple_of});
  }
  for (const auto& pred : manifest.guard.require) {
    GuardModel::Predicate p;
    for (const auto& ms : pred.symbols())
      if (auto os = op_symbol.find(ms); os != op_symbol.end())
        p.symbols.emplace_back(os->second, pred.comparison_bounds(ms));
    p.holds = [&manifest, &op, &pred](const Case& c) -> std::optional<bool> {
      try {
        return pred.evaluate(predicate_values(manifest, c.dtype,
                                              case_symbol_values(manifest, op, c),
                                              case_tensor_values(op, c))) != 0;
      } catch (const Error&) {
        return std::nullopt;
      }
    };
    g.require.push_back(std::move(p));
  }
  g.admits_dtype = [&manifest](DType d) { return in_dtypes(manifest.guard, d); };
  g.inside = [&manifest, &op](const Case& c) { return inside_guard(manifest, op, c); };
  return g;
}

std::vector<Case> guard_boundary_cases(const PackageManifest& manifest, const OpSignature& op,
                                       uint64_t seed, int64_t max_elements) {
  return props::guard_boundary_cases(guard_model_of(manifest, op), op, seed, max_elements);
}

std::vector<VariantCase> variant_cases(const PackageManifest& manifest, const OpSignature& op,
                                       uint64_t seed) {
  const auto op_symbol = op_symbols_of(manifest, op);
  std::vector<VariantCase> out;
  for (std::size_t i = 0; i < manifest.guard.variants.size(); ++i) {
    const Variant& v = manifest.guard.variants[i];
    std::map<std::string, int64_t> dims;
    for (const auto& s : op.symbols) dims[s.name] = std::max<int64_t>(s.min, 1);
    for (const auto& [ms, value] : v.dims) {
      auto it = op_symbol.find(ms);
      if (it != op_symbol.end()) dims[it->second] = value;
    }
    VariantCase vc;
    vc.kcase =
        props::case_of(op, v.dtype, dims, kgate::Layout::contiguous,
                       derive_seed(seed, "variant/" + manifest.name, static_cast<uint64_t>(i)));
    vc.kcase.family = "variant";
    vc.calls = v.calls;
    out.push_back(std::move(vc));
  }
  return out;
}

std::optional<Case> move_inside_guard(const PackageManifest& manifest, const OpSignature& op,
                                      const Case& c) {
  if (!in_dtypes(manifest.guard, c.dtype)) return std::nullopt;
  Case out = c;
  out.layout = kgate::Layout::contiguous;
  for (const auto& [ms, os] : op_symbols_of(manifest, op)) {
    auto r = manifest.guard.shapes.find(ms);
    const SymbolDomain* d = op.symbol(os);
    if (r == manifest.guard.shapes.end() || !d || !case_has(out, os)) continue;
    const auto v = props::pick_value(out.dim(os), std::max(r->second.min, d->min),
                                     std::min(r->second.max, d->max),
                                     std::max<int64_t>(1, r->second.multiple_of));
    if (!v) return std::nullopt;
    out.set_dim(os, *v);
  }
  if (inside_guard(manifest, op, out)) return out;
  // Outside by a guard.require predicate ("B * N % 8 == 0"): the nearest larger value of one of the
  // symbols it names that brings the case inside.
  const auto op_symbol = op_symbols_of(manifest, op);
  for (int64_t step = 1; step <= 64; ++step)
    for (const auto& pred : manifest.guard.require)
      for (const auto& ms : pred.symbols()) {
        auto it = op_symbol.find(ms);
        if (it == op_symbol.end() || !case_has(out, it->second)) continue;
        const std::string& os = it->second;
        Case moved = out;
        const auto r = manifest.guard.shapes.find(ms);
        const int64_t mult =
            r == manifest.guard.shapes.end() ? 1 : std::max<int64_t>(1, r->second.multiple_of);
        if (out.dim(os) > std::numeric_limits<int64_t>::max() - step * mult) continue;
        moved.set_dim(os, out.dim(os) + step * mult);
        if (inside_guard(manifest, op, moved)) return moved;
      }
  return std::nullopt;
}

std::vector<int64_t> guard_tile_sizes(const PackageManifest& manifest, const OpSignature& op) {
  std::set<int64_t> sizes;
  constexpr int64_t kLargest = int64_t{1}
                               << 40;  // ragged_sizes multiplies by 4: stay far from overflow
  for (const auto& [ms, os] : op_symbols_of(manifest, op)) {
    if (os != op.reduced_symbol) continue;
    // Where the launches' conditions switch ("when": {"if": "N <= 1024"}): both sides get cases.
    for (const auto& l : manifest.launches)
      if (l.when.if_expr)
        for (int64_t b : l.when.if_expr->comparison_bounds(ms))
          if (b > 1 && b <= kLargest) sizes.insert(b);
    auto r = manifest.guard.shapes.find(ms);
    if (r == manifest.guard.shapes.end()) continue;
    if (r->second.min > 1 && r->second.min <= kLargest) sizes.insert(r->second.min);
    if (r->second.max <= kLargest) sizes.insert(r->second.max);
    if (r->second.multiple_of > 1 && r->second.multiple_of <= kLargest)
      sizes.insert(r->second.multiple_of);
  }
  return {sizes.begin(), sizes.end()};
}

std::vector<FoundSize> manifest_sizes(const PackageManifest& manifest, const OpSignature& op) {
  std::vector<FoundSize> out;
  std::set<int64_t> seen;
  constexpr int64_t kLargest = int64_t{1} << 40;
  const auto add = [&](int64_t v, const std::string& detail) {
    if (v > 1 && v <= kLargest && seen.insert(v).second) out.push_back({v, "manifest", detail});
  };
  for (const auto& [ms, os] : op_symbols_of(manifest, op)) {
    if (os != op.reduced_symbol) continue;
    for (size_t l = 0; l < manifest.launches.size(); ++l)
      for (size_t g = 0; g < manifest.launches[l].grid.size(); ++g)
        for (int64_t d : manifest.launches[l].grid[g].divisors_of(ms))
          add(d, "launches[" + std::to_string(l) + "].grid[" + std::to_string(g) + "] " +
                     manifest.launches[l].grid[g].text());
    for (const auto& l : manifest.launches)
      if (l.when.if_expr)
        for (int64_t b : l.when.if_expr->comparison_bounds(ms))
          add(b, "when " + l.when.if_expr->text());
    if (auto r = manifest.guard.shapes.find(ms); r != manifest.guard.shapes.end()) {
      const std::string g = "guard.shapes." + ms;
      add(r->second.min, g + ".min");
      add(r->second.max, g + ".max");
      add(r->second.multiple_of, g + ".multiple_of");
    }
  }
  return out;
}

}  // namespace kgate::package
