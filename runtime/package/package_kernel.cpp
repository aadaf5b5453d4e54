// Guard checks, boundary cases, launch plans and the package KernelInfo (module cache, workspaces,
// cuLaunchKernel through the run-time-resolved driver API).
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

namespace kgate::package {

namespace {

std::string list_of(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out + "]";
}

// Integers as integers, other values to the last digit.
std::string number(double v) {
  return format_number(
      v, std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.0e15 ? "%.0f" : "%.17g");
}

std::string values_text(const SymbolValues& values) {
  std::string out;
  for (const auto& [name, v] : values)
    out += (out.empty() ? "" : ", ") + name + "=" + std::to_string(v);
  return out.empty() ? "no symbols" : out;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

/// The op tensor spec of that name and where its view sits in a KernelCall.
struct TensorRef {
  const TensorSpec* spec = nullptr;
  bool output = false;
  std::size_t index = 0;
};

TensorRef find_tensor(const OpSignature& op, const std::string& name) {
  for (std::size_t i = 0; i < op.inputs.size(); ++i)
    if (op.inputs[i].name == name) return {&op.inputs[i], false, i};
  for (std::size_t i = 0; i < op.outputs.size(); ++i)
    if (op.outputs[i].name == name) return {&op.outputs[i], true, i};
  return {};
}

const TensorView& view_of(const KernelCall& call, const TensorRef& ref) {
  return ref.output ? call.outputs.at(ref.index) : call.inputs.at(ref.index);
}

/// A dimension index (negative counts from the end) resolved for `rank`; -1 when out of range.
int resolve_dim(int dim, int64_t rank) {
  const int64_t d = dim < 0 ? rank + dim : dim;
  return d >= 0 && d < rank ? static_cast<int>(d) : -1;
}

std::string rank_violation(const Guard& guard, int64_t rank) {
  if (guard.ranks.empty() || std::find(guard.ranks.begin(), guard.ranks.end(),
                                       static_cast<int>(rank)) != guard.ranks.end())
    return {};
  std::vector<std::string> ranks;
  for (int r : guard.ranks) ranks.push_back(std::to_string(r));
  return "rank " + std::to_string(rank) + " is not in guard.ranks " + list_of(ranks);
}

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
    return std::string("dtype ") + dtype_name(dtype) + " is not in guard.dtypes " + list_of(names);
  }
  if (auto r = rank_violation(g, rank); !r.empty()) return r;
  if (std::find(g.layouts.begin(), g.layouts.end(), layout) == g.layouts.end()) {
    std::vector<std::string> names;
    for (Layout l : g.layouts) names.push_back(layout_name(l));
    return std::string("layout ") + layout_name(layout) + " is not in guard.layouts " +
           list_of(names);
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
  for (std::size_t i = 0; i < g.require.size(); ++i) {
    const Expr& r = g.require[i];
    const std::string field = "guard.require[" + std::to_string(i) + "] \"" + r.text() + "\"";
    std::string shown;  // the values of the symbols it names
    for (const auto& s : r.symbols())
      if (auto it = values.find(s); it != values.end())
        shown += (shown.empty() ? "" : ", ") + s + "=" + std::to_string(it->second);
    try {
      if (r.evaluate(values) == 0) return field + " is 0 (" + shown + ")";
    } catch (const Error& e) {
      return field + " cannot be evaluated (" + e.what() + ")";
    }
  }
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
    const TensorRef t = find_tensor(op, s.tensor);
    if (!t.spec) continue;
    const int d = resolve_dim(s.dim, static_cast<int64_t>(t.spec->shape.size()));
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
    out.push_back(std::move(r));
  }
  return out;
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
    if (const TensorRef t = find_tensor(op, s.tensor); t.spec)
      ranks.push_back(static_cast<int64_t>(t.spec->shape.size()));
  if (ranks.empty() && !op.inputs.empty())
    ranks.push_back(static_cast<int64_t>(op.inputs[0].shape.size()));
  const int rank = ranks.empty() ? 0 : static_cast<int>(ranks.front());
  const std::string why = guard_violation(
      manifest, c.dtype, case_symbol_values(manifest, op, c), to_package_layout(c.layout), rank,
      guard_reads_tensors(manifest.guard) ? case_tensor_values(op, c) : SymbolValues{});
  if (!why.empty()) return why;
  for (int64_t r : ranks)
    if (auto v = rank_violation(manifest.guard, r); !v.empty()) return v;
  return {};
}

bool inside_guard(const PackageManifest& manifest, const OpSignature& op, const Case& c) {
  return case_guard_violation(manifest, op, c).empty();
}

namespace {

/// Binds the manifest's symbols from a call's tensors; returns a violation ("" when all bound),
/// with `rank` set to the rank of the first bound tensor.
std::string bind_call_symbols(const PackageManifest& manifest, const OpSignature& op,
                              const KernelCall& call, std::map<std::string, int64_t>& dims,
                              int& rank) {
  if (call.inputs.size() != op.inputs.size() || call.outputs.size() != op.outputs.size())
    throw Error(ErrorKind::internal, "package " + manifest.name + ": the call carries " +
                                         std::to_string(call.inputs.size()) + " input(s) and " +
                                         std::to_string(call.outputs.size()) + " output(s), op '" +
                                         op.name + "' has " + std::to_string(op.inputs.size()) +
                                         " and " + std::to_string(op.outputs.size()));
  rank = call.inputs.empty() ? 0 : static_cast<int>(call.inputs[0].dim());
  bool first = true;
  for (const auto& s : manifest.symbols) {
    const TensorRef t = find_tensor(op, s.tensor);
    if (!t.spec)
      throw Error(ErrorKind::internal, "package " + manifest.name + ": symbol " + s.name +
                                           " names tensor '" + s.tensor + "', which op '" +
                                           op.name + "' does not have");
    const TensorView& v = view_of(call, t);
    if (first) rank = static_cast<int>(v.dim());
    first = false;
    if (auto r = rank_violation(manifest.guard, v.dim()); !r.empty())
      return r + " (tensor " + s.tensor + ")";
    const int d = resolve_dim(s.dim, v.dim());
    if (d < 0)
      return "symbol " + s.name + " is bound to dimension " + std::to_string(s.dim) + " of " +
             s.tensor + ", which has rank " + std::to_string(v.dim());
    dims[s.name] = v.sizes[static_cast<std::size_t>(d)];
  }
  return {};
}

}  // namespace

std::string call_guard_violation(const PackageManifest& manifest, const OpSignature& op,
                                 const KernelCall& call) {
  std::map<std::string, int64_t> dims;
  int rank = 0;
  if (auto why = bind_call_symbols(manifest, op, call, dims, rank); !why.empty()) return why;
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
             a.name + "=" + number(a.value) + ")";
    if (it->second != a.value)
      return "attribute " + a.name + "=" + number(it->second) +
             " differs from the package's attributes." + a.name + "=" + number(a.value);
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

// ---------------------------------------------------------------------------------------------
// The launch plan

const unsigned char* PlannedLaunch::param_buffer() const {
  return reinterpret_cast<const unsigned char*>(storage_.data());
}

std::vector<void*> PlannedLaunch::kernel_params() {
  std::vector<void*> params;
  unsigned char* base = reinterpret_cast<unsigned char*>(storage_.data());
  for (const auto& a : args) params.push_back(base + a.offset);
  return params;
}

void PlannedLaunch::append(PlannedArg arg, const void* value) {
  arg.offset = (buffer_size_ + arg.alignment - 1) / arg.alignment * arg.alignment;
  buffer_size_ = arg.offset + arg.size;
  storage_.resize((buffer_size_ + 7) / 8, 0);
  write(arg, value);
  args.push_back(std::move(arg));
}

void PlannedLaunch::write(const PlannedArg& arg, const void* value) {
  std::memcpy(reinterpret_cast<unsigned char*>(storage_.data()) + arg.offset, value, arg.size);
}

void LaunchPlan::bind_workspace(std::size_t index, void* pointer) {
  const uint64_t bits = reinterpret_cast<uintptr_t>(pointer);
  for (auto& l : launches)
    for (const auto& a : l.args)
      if (a.kind == KernelArg::Kind::workspace && a.workspace == static_cast<int>(index))
        l.write(a, &bits);
}

/// Builds LaunchPlans (a class so that PlannedLaunch can keep its buffer private).
class LaunchPlanner {
 public:
  LaunchPlanner(const PackageManifest& m, const OpSignature& op,
                const std::map<std::string, std::string>& lowered, const KernelCall& call)
      : m_(m), op_(op), lowered_(lowered), call_(call) {}

  LaunchPlan plan() {
    const std::string why = call_guard_violation(m_, op_, call_);
    if (!why.empty())
      throw Error(ErrorKind::usage,
                  "package " + m_.name + ": the call is outside the package's guard (" + why +
                      "); such calls run the op's reference (KernelInfo::accepts), never the "
                      "package's kernels");
    LaunchPlan plan;
    plan.dtype = call_.inputs.at(0).dtype;
    std::map<std::string, int64_t> dims;
    int rank = 0;
    bind_call_symbols(m_, op_, call_, dims, rank);
    for (const auto& [name, v] : dims) plan.symbols[name] = v;
    for (const auto& a : m_.attributes)
      if (a.is_integer) plan.symbols[a.name] = static_cast<int64_t>(a.value);
    symbols_ = &plan.symbols;
    values_ = plan.symbols;
    values_[kDtypeSizeSymbol] = static_cast<int64_t>(dtype_size(plan.dtype));
    if (m_.reads_device) put_device_values(values_, device_props_in_effect());
    // For when.if; only a package with conditions reads them.
    if (std::any_of(m_.launches.begin(), m_.launches.end(),
                    [](const Launch& l) { return l.when.if_expr.has_value(); }))
      for (const auto& [k, v] : call_tensor_values(op_, call_)) values_[k] = v;
    layout_ = call_layout(call_);

    for (std::size_t w = 0; w < m_.workspace.size(); ++w) plan.workspaces.push_back(workspace(w));
    for (std::size_t i = 0; i < m_.launches.size(); ++i) {
      if (runs(i)) plan.launches.push_back(launch(i, plan));
      else plan.skipped.push_back(i);
    }
    // No launch for a call whose outputs hold elements: the kernel would leave them unwritten.
    bool outputs_empty = true;
    for (const auto& o : call_.outputs) outputs_empty = outputs_empty && o.numel() == 0;
    if (plan.launches.empty() && !m_.launches.empty() && !outputs_empty)
      fail("launches", "no launch runs for this call, so its outputs would stay unwritten: " +
                           missed_conditions() +
                           ". Widen a launch's \"when\", or set guard.unmatched to \"fallback\" so "
                           "that such calls "
                           "run the reference");
    return plan;
  }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& message) const {
    throw Error(ErrorKind::package, "package " + m_.name + " (" + m_.manifest_path.string() +
                                        "): " + field + ": " + message + " [" +
                                        values_text(*symbols_) + "]");
  }

  int64_t eval(const std::string& field, const Expr& e) const {
    try {
      return e.evaluate(values_);
    } catch (const Error& err) {
      fail(field, err.what());
    }
  }

  /// Where launch `i` is written in kgate.json.
  std::string launch_field(std::size_t i) const {
    return m_.launches[i].field.empty() ? "launches[" + std::to_string(i) + "]"
                                        : m_.launches[i].field;
  }

  /// Whether launch `i` runs for this call: its "when" holds (the call's layout is listed, the
  /// "if" expression is non-zero).
  bool runs(std::size_t i) const {
    const LaunchCondition& w = m_.launches[i].when;
    if (!w.layouts.empty() &&
        std::find(w.layouts.begin(), w.layouts.end(), layout_) == w.layouts.end())
      return false;
    return !w.if_expr || eval(launch_field(i) + ".when.if", *w.if_expr) != 0;
  }

  /// Why each launch did not run for this call: `launches[0].when.if "N <= 32" is 0`.
  std::string missed_conditions() const {
    std::string out;
    for (std::size_t i = 0; i < m_.launches.size() && i < 8; ++i) {
      const LaunchCondition& w = m_.launches[i].when;
      out += out.empty() ? "" : "; ";
      if (!w.layouts.empty() &&
          std::find(w.layouts.begin(), w.layouts.end(), layout_) == w.layouts.end())
        out += launch_field(i) + ".when.layouts does not list " + layout_name(layout_);
      else if (w.if_expr) out += launch_field(i) + ".when.if \"" + w.if_expr->text() + "\" is 0";
    }
    if (m_.launches.size() > 8) out += "; and " + std::to_string(m_.launches.size() - 8) + " more";
    return out;
  }

  PlannedWorkspace workspace(std::size_t w) const {
    const Workspace& ws = m_.workspace[w];
    const std::string field = "workspace[" + std::to_string(w) + "] (" + ws.name + ")";
    PlannedWorkspace p;
    p.name = ws.name;
    p.dtype = ws.dtype;
    p.zero = ws.zero;
    p.start = ws.start;
    int64_t bytes = static_cast<int64_t>(dtype_size(ws.dtype));
    for (std::size_t d = 0; d < ws.shape.size(); ++d) {
      const std::string f = field + ".shape[" + std::to_string(d) + "]";
      const int64_t v = eval(f, ws.shape[d]);
      if (v < 0)
        fail(f, "\"" + ws.shape[d].text() + "\" evaluates to " + std::to_string(v) +
                    "; expected >= 0");
      if (v != 0 && bytes > std::numeric_limits<int64_t>::max() / v)
        fail(field, "the workspace size overflows 64 bits");
      bytes *= v;
      p.shape.push_back(v);
    }
    p.bytes = bytes;
    return p;
  }

  PlannedLaunch launch(std::size_t i, const LaunchPlan& plan) const {
    const Launch& l = m_.launches[i];
    const std::string field = launch_field(i);
    PlannedLaunch p;
    p.index = i;
    p.field = field;
    p.name_expression = l.kernel_name(plan.dtype);
    if (p.name_expression.empty())
      fail(field + ".kernel",
           std::string("no kernel name expression for dtype ") + dtype_name(plan.dtype));
    auto low = lowered_.find(p.name_expression);
    if (low == lowered_.end() || low->second.empty())
      fail(field + ".kernel",
           "\"" + p.name_expression +
               "\" has no lowered name in the compiled package (was it compiled from this "
               "manifest? recompile with an empty KGATE_CACHE_DIR)");
    p.lowered_name = low->second;

    for (std::size_t d = 0; d < 3; ++d) {
      const char axis = "xyz"[d];
      const std::string gf = field + ".grid[" + std::to_string(d) + "]";
      const int64_t g = d < l.grid.size() ? eval(gf, l.grid[d]) : 1;
      const int64_t glimit = cuda_limits::kGrid[d];
      if (g < 0 || g > glimit)
        fail(gf, "\"" + l.grid[d].text() + "\" evaluates to " + std::to_string(g) +
                     "; expected 0 (nothing to " + "launch) to " + std::to_string(glimit) +
                     " blocks in grid " + axis);
      if (g == 0) p.empty = true;
      p.grid[d] = static_cast<uint32_t>(g);

      const std::string bf = field + ".block[" + std::to_string(d) + "]";
      const int64_t b = d < l.block.size() ? eval(bf, l.block[d]) : 1;
      const int64_t blimit = cuda_limits::kBlock[d];
      if (b < 0 || b > blimit)
        fail(bf, "\"" + l.block[d].text() + "\" evaluates to " + std::to_string(b) +
                     "; expected 0 (nothing to " + "launch) to " + std::to_string(blimit) +
                     " threads in block " + axis);
      if (b == 0) p.empty = true;
      p.block[d] = static_cast<uint32_t>(b);
    }
    const int64_t threads = int64_t{p.block[0]} * p.block[1] * p.block[2];
    if (!p.empty && threads > cuda_limits::kThreadsPerBlock)
      fail(field + ".block", std::to_string(p.block[0]) + " x " + std::to_string(p.block[1]) +
                                 " x " + std::to_string(p.block[2]) + " = " +
                                 std::to_string(threads) +
                                 " threads per block; CUDA allows at most " +
                                 std::to_string(cuda_limits::kThreadsPerBlock));
    const int64_t smem = eval(field + ".shared_mem", l.shared_mem);
    if (smem < 0 || smem > static_cast<int64_t>(std::numeric_limits<uint32_t>::max()))
      fail(field + ".shared_mem", "\"" + l.shared_mem.text() + "\" evaluates to " +
                                      std::to_string(smem) + " bytes; expected 0 to 4294967295");
    p.shared_mem = static_cast<uint32_t>(smem);
    if (l.max_dynamic_shared_mem) {
      const std::string f = field + ".max_dynamic_shared_mem";
      const int64_t limit = eval(f, *l.max_dynamic_shared_mem);
      if (limit < 0 || limit > cuda_limits::kSharedPerBlockMax)
        fail(f, "\"" + l.max_dynamic_shared_mem->text() + "\" evaluates to " +
                    std::to_string(limit) + " bytes; expected 0 to " +
                    std::to_string(cuda_limits::kSharedPerBlockMax));
      if (smem > limit)
        fail(f, "\"" + l.max_dynamic_shared_mem->text() + "\" = " + std::to_string(limit) +
                    " bytes is below the launch's shared_mem of " + std::to_string(smem) +
                    ": the kernel's own host code would fail this launch too");
      p.max_dynamic_shared_mem = static_cast<uint32_t>(limit);
    }
    p.carveout = l.carveout;
    for (std::size_t d = 0; d < l.cluster.size() && d < 3; ++d) {
      const std::string f = field + ".cluster[" + std::to_string(d) + "]";
      const int64_t c = eval(f, l.cluster[d]);
      if (c < 1 || c > 8)
        fail(f, "\"" + l.cluster[d].text() + "\" evaluates to " + std::to_string(c) +
                    "; a cluster axis is 1 to 8");
      if (!p.empty && p.grid[d] % c != 0)
        fail(f, "grid axis " + std::string(1, "xyz"[d]) + " of " + std::to_string(p.grid[d]) +
                    " blocks is not a multiple of the cluster's " + std::to_string(c));
      p.cluster[d] = static_cast<uint32_t>(c);
    }
    if (!l.cluster.empty()) {
      for (std::size_t d = l.cluster.size(); d < 3; ++d) p.cluster[d] = 1;
      if (int64_t{p.cluster[0]} * p.cluster[1] * p.cluster[2] > 8)
        fail(field + ".cluster", "a cluster holds at most 8 blocks (the portable size)");
    }

    for (std::size_t a = 0; a < l.args.size(); ++a)
      add_arg(p, l.args[a], field + ".args[" + std::to_string(a) + "]", plan);
    return p;
  }

  void add_arg(PlannedLaunch& p, const KernelArg& arg, const std::string& field,
               const LaunchPlan& plan) const {
    PlannedArg out;
    out.field = field;
    out.kind = arg.kind;
    switch (arg.kind) {
      case KernelArg::Kind::tensor: {
        const TensorRef t = find_tensor(op_, arg.name);
        if (!t.spec) fail(field, "op '" + op_.name + "' has no tensor \"" + arg.name + "\"");
        const uint64_t bits = reinterpret_cast<uintptr_t>(view_of(call_, t).data);
        out.description = "tensor " + arg.name;
        pointer(p, std::move(out), bits);
        return;
      }
      case KernelArg::Kind::workspace: {
        out.description = "workspace " + arg.name;
        for (std::size_t w = 0; w < plan.workspaces.size(); ++w)
          if (plan.workspaces[w].name == arg.name) out.workspace = static_cast<int>(w);
        if (out.workspace < 0) fail(field, "no workspace named \"" + arg.name + "\"");
        pointer(p, std::move(out), 0);
        return;
      }
      case KernelArg::Kind::shape: {
        out.description = "shape \"" + arg.value.text() + "\" as " + scalar_type_name(arg.type);
        const int64_t v = eval(field, arg.value);
        integer_or_float(p, std::move(out), arg.type, static_cast<double>(v), v, true);
        return;
      }
      case KernelArg::Kind::attribute: {
        out.description = "attribute " + arg.name + " as " + scalar_type_name(arg.type);
        double v = 0;
        auto it = call_.attributes.find(arg.name);
        auto op_default = op_.attributes.find(arg.name);
        if (it != call_.attributes.end()) {
          v = it->second;
        } else if (const Attribute* a = m_.attribute(arg.name)) {
          v = a->value;
        } else if (op_default != op_.attributes.end()) {
          v = op_default->second;
        } else {
          fail(field, "the call has no attribute \"" + arg.name + "\"");
        }
        if (is_integer(arg.type) &&
            (!std::isfinite(v) || v != std::floor(v) || std::fabs(v) > 9.2e18))
          fail(field, "attribute " + arg.name + "=" + number(v) +
                          " is not an integer; it cannot be passed as " +
                          scalar_type_name(arg.type));
        integer_or_float(p, std::move(out), arg.type, v,
                         is_integer(arg.type) ? static_cast<int64_t>(v) : 0, is_integer(arg.type));
        return;
      }
      case KernelArg::Kind::stride: {
        out.description = "stride of " + arg.name + " dimension " + std::to_string(arg.dim) +
                          " as " + scalar_type_name(arg.type);
        const TensorRef t = find_tensor(op_, arg.name);
        if (!t.spec) fail(field, "op '" + op_.name + "' has no tensor \"" + arg.name + "\"");
        const TensorView& view = view_of(call_, t);
        const int d = resolve_dim(arg.dim, view.dim());
        if (d < 0)
          fail(field, out.description + ": tensor " + arg.name + " has rank " +
                          std::to_string(view.dim()) + ", so dimension " + std::to_string(arg.dim) +
                          " does not exist");
        const int64_t v = view.strides[static_cast<std::size_t>(d)];
        integer_or_float(p, std::move(out), arg.type, static_cast<double>(v), v, true);
        return;
      }
      case KernelArg::Kind::scalar: {
        if (arg.float_expr) {
          out.description =
              "scalar \"" + arg.float_expr->text() + "\" as " + scalar_type_name(arg.type);
          // In float64, over the symbols and every attribute of the call, rounded once when packed.
          FloatValues values;
          for (const auto& [name, v] : values_) values[name] = static_cast<double>(v);
          for (const auto& [name, v] : op_.attributes) values[name] = v;
          for (const auto& a : m_.attributes) values[a.name] = a.value;
          for (const auto& [name, v] : call_.attributes) values[name] = v;
          double v = 0;
          try {
            v = arg.float_expr->evaluate(values);
          } catch (const Error& e) {
            fail(field, e.what());
          }
          out.description +=
              " (" +
              (arg.type == ScalarType::f32 ? format_number(static_cast<float>(v), "%.9g")
                                           : format_number(v, "%.17g")) +
              ")";
          integer_or_float(p, std::move(out), arg.type, v, 0, false);
          return;
        }
        out.description = "scalar as " + std::string(scalar_type_name(arg.type));
        if (is_integer(arg.type))
          integer_or_float(p, std::move(out), arg.type, static_cast<double>(arg.int_value),
                           arg.int_value, true);
        else integer_or_float(p, std::move(out), arg.type, arg.float_value, 0, false);
        return;
      }
    }
  }

  static void pointer(PlannedLaunch& p, PlannedArg a, uint64_t bits) {
    static_assert(sizeof(void*) == 8, "kgate packs 64-bit device pointers");
    a.type = ScalarType::u64;
    a.size = a.alignment = sizeof(void*);
    p.append(std::move(a), &bits);
  }

  /// Packs a value as `type`: integers range-checked from `i` (when `exact`), floats from `f`.
  void integer_or_float(PlannedLaunch& p, PlannedArg a, ScalarType type, double f, int64_t i,
                        bool exact) const {
    a.type = type;
    a.size = a.alignment = scalar_type_size(type);
    auto out_of_range = [&](const char* range) {
      fail(a.field, a.description + ": the value " + (exact ? std::to_string(i) : number(f)) +
                        " does not fit in " + scalar_type_name(type) + " (" + range + ")");
    };
    switch (type) {
      case ScalarType::i32: {
        if (i < std::numeric_limits<int32_t>::min() || i > std::numeric_limits<int32_t>::max())
          out_of_range("-2147483648 to 2147483647");
        const int32_t v = static_cast<int32_t>(i);
        p.append(std::move(a), &v);
        return;
      }
      case ScalarType::i64: {
        const int64_t v = i;
        p.append(std::move(a), &v);
        return;
      }
      case ScalarType::u32: {
        if (i < 0 || i > static_cast<int64_t>(std::numeric_limits<uint32_t>::max()))
          out_of_range("0 to 4294967295");
        const uint32_t v = static_cast<uint32_t>(i);
        p.append(std::move(a), &v);
        return;
      }
      case ScalarType::u64: {
        if (i < 0) out_of_range("0 to 18446744073709551615");
        const uint64_t v = static_cast<uint64_t>(i);
        p.append(std::move(a), &v);
        return;
      }
      case ScalarType::f32: {
        const float v = static_cast<float>(f);
        if (std::isfinite(f) && !std::isfinite(v)) out_of_range("finite float");
        p.append(std::move(a), &v);
        return;
      }
      case ScalarType::f64: {
        const double v = f;
        p.append(std::move(a), &v);
        return;
      }
    }
  }

  const PackageManifest& m_;
  const OpSignature& op_;
  const std::map<std::string, std::string>& lowered_;
  const KernelCall& call_;
  const SymbolValues* symbols_ = nullptr;  ///< the plan's symbols, shown in messages
  SymbolValues values_;                    ///< those and the built-in symbols, for evaluation
  Layout layout_ = Layout::contiguous;
};

LaunchPlan plan_launches(const PackageManifest& manifest, const OpSignature& op,
                         const std::map<std::string, std::string>& lowered_names,
                         const KernelCall& call) {
  return LaunchPlanner(manifest, op, lowered_names, call).plan();
}

// ---------------------------------------------------------------------------------------------
// The kernel: module cache, workspaces, launches

/// The bits of `value` as an element of `dtype` (rounded to nearest, ties to even).
uint64_t element_bits(DType dtype, double value) {
  const float f = static_cast<float>(value);
  uint32_t f32 = 0;
  std::memcpy(&f32, &f, 4);
  switch (dtype) {
    case DType::f64: {
      uint64_t b = 0;
      std::memcpy(&b, &value, 8);
      return b;
    }
    case DType::f32:
      return f32;
    case DType::bf16:
      if (std::isnan(f)) return 0x7fc0;
      return (f32 + 0x7fffu + ((f32 >> 16) & 1u)) >> 16;
    case DType::f16: {
      const uint32_t sign = (f32 >> 16) & 0x8000u;
      const uint32_t magnitude = f32 & 0x7fffffffu;
      if (magnitude > 0x7f800000u) return sign | 0x7e00u;   // NaN
      if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // rounds past 65504: inf
      if (magnitude < 0x33000001u) return sign;             // below half the least subnormal
      const int exponent = static_cast<int>(magnitude >> 23) - 127;
      uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;        // 24 bits with the hidden one
      const int shift = exponent < -14 ? 13 + (-14 - exponent) : 13;  // subnormals lose more bits
      const uint32_t rest = mantissa & ((1u << shift) - 1);
      const uint32_t half = 1u << (shift - 1);
      mantissa >>= shift;
      if (rest > half || (rest == half && (mantissa & 1u))) ++mantissa;  // to nearest, ties to even
      if (exponent < -14) return sign | mantissa;  // (a carry makes it normal)
      return sign | ((static_cast<uint32_t>(exponent + 15) << 10) + (mantissa - 0x400u));
    }
    case DType::i32:
      return static_cast<uint32_t>(static_cast<int32_t>(value));
    case DType::i64:
      return static_cast<uint64_t>(static_cast<int64_t>(value));
    default:
      break;
  }
  throw Error(ErrorKind::internal,
              std::string("no start value bits for dtype ") + dtype_name(dtype));
}

namespace {

/// What every copy of a package's KernelInfo shares.
struct PackageState {
  PackageManifest manifest;
  OpSignature op;
  std::map<std::string, std::string> lowered_names;  ///< of every unit
  /// One CUBIN per translation unit (one for most packages), each with the key that identifies it
  /// in the module cache.
  struct Unit {
    std::string key;
    std::string cubin;
    std::map<std::string, std::vector<KernelParam>>
        params;  ///< read from the CUBIN, by lowered name
    /// This unit's own lowered names: a plain (non-template) kernel whose parameter types come from
    /// a macro ("floatX" set by -DENABLE_BF16) has another mangled name in each unit.
    std::map<std::string, std::string> lowered_names;
  };
  std::vector<Unit> units;
  std::map<std::pair<DType, std::size_t>, std::size_t>
      unit_of;  ///< (dtype, launch) -> unit; empty: 0
  /// A package compiled into the program by nvcc (no units): each name expression's host stub,
  /// whose function cudaGetFuncBySymbol finds.
  std::map<std::string, const void*> host_functions;
  /// What kgate did that the kernel's own host code must also do (raising a shared memory limit),
  /// once each: the report's warnings.
  struct Notes {
    std::mutex mutex;
    std::vector<std::string> lines;
    void add(const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex);
      if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(line);
    }
    std::vector<std::string> get() {
      std::lock_guard<std::mutex> lock(mutex);
      return lines;
    }
  };
  std::shared_ptr<Notes> notes = std::make_shared<Notes>();
};

/// A CUBIN loaded into one context, with its function handles.
struct LoadedModule {
  CUmodule module = nullptr;
  std::map<std::string, CUfunction> functions;        ///< by lowered name
  std::map<CUfunction, uint32_t> dynamic_shared_set;  ///< the max-dynamic-smem attribute set
  std::set<std::pair<CUfunction, int>> carveout_set;  ///< the preferred carveouts set
  std::set<std::pair<CUfunction, std::size_t>> params_checked;  ///< (function, launch index)
};

/// Every package module of the process, by (CUBIN key, context). Modules stay loaded for the
/// process: the driver releases them with their context. Leaked on purpose, so that no module is
/// unloaded during static destruction after the driver is gone.
struct ModuleCache {
  std::mutex mutex;
  std::map<std::pair<std::string, CUcontext>, LoadedModule> modules;
};

ModuleCache& module_cache() {
  static ModuleCache* cache = new ModuleCache;
  return *cache;
}

using FuncGetParamInfoFn = CUresult (*)(CUfunction, size_t, size_t*, size_t*);

/// cuFuncGetParamInfo when the driver has it (CUDA 12.4+), else nullptr: the check is skipped.
FuncGetParamInfoFn param_info_function() {
  static const auto fn =
      reinterpret_cast<FuncGetParamInfoFn>(cuda::driver_function("cuFuncGetParamInfo"));
  return fn;
}

/// Re-throws an Error with the package and launch in front of its message.
template <class F>
void with_context(const std::string& where, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    throw Error(e.kind(), where + ": " + e.what());
  }
}

/// The current CUDA context (the runtime's primary context of the current device).
CUcontext current_context(const cuda::DriverApi& api) {
  CUcontext ctx = nullptr;
  KGATE_DRIVER_CALL(api.CtxGetCurrent(&ctx));
  if (ctx) return ctx;
  int device = 0;
  KGATE_CUDA_CALL(cudaGetDevice(&device));
  KGATE_CUDA_CALL(cudaSetDevice(device));  // makes the device's primary context current
  KGATE_CUDA_CALL(cudaFree(nullptr));      // and initializes it
  KGATE_DRIVER_CALL(api.CtxGetCurrent(&ctx));
  if (!ctx)
    throw Error(ErrorKind::device,
                "no current CUDA context after cudaSetDevice(" + std::to_string(device) + ")");
  return ctx;
}

/// Checks the kernel's parameters (count and sizes) against the launch's "args", when the driver
/// can tell (cuFuncGetParamInfo).
void check_parameters(CUfunction f, const PlannedLaunch& l, const std::vector<KernelParam>* read) {
  const FuncGetParamInfoFn info = param_info_function();
  // The count is found by asking for the parameter past the last one, a call that fails by design:
  // under compute-sanitizer (kgate check --sanitize) that failure would count as the kernel's
  // error, and these checks ran in the check itself.
  if (!info || cuda::under_sanitizer()) return;
  const std::string where = l.field + ": kernel \"" + l.name_expression + "\"";
  // The parameter table kgate read from the CUBIN without a GPU (validate checks args against it)
  // must say what the driver says.
  if (read && !read->empty()) {
    for (std::size_t i = 0; i <= read->size(); ++i) {
      size_t offset = 0, size = 0;
      const CUresult rc = info(f, i, &offset, &size);
      if (i == read->size()) {
        if (rc == CUDA_SUCCESS)
          throw Error(ErrorKind::internal,
                      where +
                          ": the driver lists more parameters than kgate read from the CUBIN (" +
                          std::to_string(read->size()) + "); please report this");
        break;
      }
      if (rc != CUDA_SUCCESS || offset != (*read)[i].offset || size != (*read)[i].size)
        throw Error(ErrorKind::internal,
                    where + ": parameter " + std::to_string(i) + " is at offset " +
                        std::to_string(offset) + ", " + std::to_string(size) +
                        " bytes for the driver, " + "but kgate read offset " +
                        std::to_string((*read)[i].offset) + ", " + std::to_string((*read)[i].size) +
                        " bytes from the CUBIN; please report this");
    }
  }
  for (std::size_t i = 0; i < l.args.size(); ++i) {
    size_t offset = 0, size = 0;
    const CUresult rc = info(f, i, &offset, &size);
    if (rc == CUDA_ERROR_INVALID_VALUE)
      throw Error(ErrorKind::package, where + " takes " + std::to_string(i) +
                                          " parameter(s), but \"args\" lists " +
                                          std::to_string(l.args.size()) +
                                          "; make \"args\" match the kernel's "
                                          "signature");
    if (rc != CUDA_SUCCESS) return;  // the driver cannot tell for this function: skip the check
    if (size != l.args[i].size)
      throw Error(ErrorKind::package, where + ": parameter " + std::to_string(i) + " is " +
                                          std::to_string(size) + " bytes, but " + l.args[i].field +
                                          " (" + l.args[i].description + ") is " +
                                          std::to_string(l.args[i].size) +
                                          " bytes; fix its \"type\" or the kernel's "
                                          "signature");
  }
  size_t offset = 0, size = 0;
  if (info(f, l.args.size(), &offset, &size) == CUDA_SUCCESS) {
    std::size_t n = l.args.size() + 1;
    while (n < 4096 && info(f, n, &offset, &size) == CUDA_SUCCESS) ++n;
    throw Error(ErrorKind::package,
                where + " takes " + std::to_string(n) + " parameters, but \"args\" lists only " +
                    std::to_string(l.args.size()) + "; make \"args\" match the kernel's signature");
  }
}

/// Stream-ordered workspace allocations, freed (on the stream) when the launch is done or failed.
class WorkspaceAllocations {
 public:
  WorkspaceAllocations(cudaStream_t stream) : stream_(stream) {}
  ~WorkspaceAllocations() {
    for (void* p : pointers_) {
      if (async_) KGATE_CUDA_CALL_NOTHROW(cudaFreeAsync(p, stream_));
      else KGATE_CUDA_CALL_NOTHROW(cudaFree(p));
    }
  }
  WorkspaceAllocations(const WorkspaceAllocations&) = delete;
  WorkspaceAllocations& operator=(const WorkspaceAllocations&) = delete;

  void* allocate(std::size_t bytes, DType dtype, std::optional<double> start) {
    if (!probed_) {
      int device = 0, pools = 0;
      KGATE_CUDA_CALL(cudaGetDevice(&device));
      KGATE_CUDA_CALL(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device));
      async_ = pools != 0;
      probed_ = true;
    }
    void* p = nullptr;
    if (async_) KGATE_CUDA_CALL(cudaMallocAsync(&p, bytes, stream_));
    else KGATE_CUDA_CALL(cudaMalloc(&p, bytes));
    pointers_.push_back(p);
    if (start) fill(p, bytes, dtype, *start);
    return p;
  }

  /// Every element of `dtype` at `p` set to `value`, on the stream: a byte memset where the
  /// element's bytes agree, else the driver's 16- or 32-bit memsets (a 64-bit element as two
  /// strided 32-bit halves).
  void fill(void* p, std::size_t bytes, DType dtype, double value) {
    const std::size_t size = dtype_size(dtype);
    const uint64_t bits = element_bits(dtype, value);
    bool bytes_agree = true;
    for (std::size_t i = 1; i < size; ++i)
      bytes_agree &= ((bits >> (8 * i)) & 0xff) == (bits & 0xff);
    if (bytes_agree) {
      KGATE_CUDA_CALL(cudaMemsetAsync(p, static_cast<int>(bits & 0xff), bytes, stream_));
      return;
    }
    using D16 = CUresult (*)(CUdeviceptr, unsigned short, size_t, CUstream);
    using D32 = CUresult (*)(CUdeviceptr, unsigned int, size_t, CUstream);
    using D2D32 = CUresult (*)(CUdeviceptr, size_t, unsigned int, size_t, size_t, CUstream);
    // Resolved once: a workspace is filled inside every launch of its package.
    static const auto d16 = reinterpret_cast<D16>(cuda::driver_function("cuMemsetD16Async"));
    static const auto d32 = reinterpret_cast<D32>(cuda::driver_function("cuMemsetD32Async"));
    static const auto d2d32 = reinterpret_cast<D2D32>(cuda::driver_function("cuMemsetD2D32Async"));
    const auto ptr = reinterpret_cast<CUdeviceptr>(p);
    const auto stream = reinterpret_cast<CUstream>(stream_);
    const std::size_t n = bytes / size;
    if (size == 2 && d16) {
      KGATE_DRIVER_CALL(d16(ptr, static_cast<unsigned short>(bits), n, stream));
    } else if (size == 4 && d32) {
      KGATE_DRIVER_CALL(d32(ptr, static_cast<unsigned int>(bits), n, stream));
    } else if (size == 8 && d2d32) {
      KGATE_DRIVER_CALL(d2d32(ptr, 8, static_cast<unsigned int>(bits), 1, n, stream));
      KGATE_DRIVER_CALL(d2d32(ptr + 4, 8, static_cast<unsigned int>(bits >> 32), 1, n, stream));
    } else {
      throw Error(ErrorKind::device,
                  std::string("the driver lacks the memset that fills a workspace of ") +
                      dtype_name(dtype));
    }
  }

 private:
  cudaStream_t stream_;
  bool probed_ = false;
  bool async_ = false;
  std::vector<void*> pointers_;
};

/// The function of a launch in the package's CUBIN for the call's dtype: its module loaded once
/// per context, the function looked up and its parameters checked once. Under module_cache's lock.
std::pair<CUfunction, LoadedModule*> module_function(const PackageState& state,
                                                     const LaunchPlan& plan, const PlannedLaunch& l,
                                                     const cuda::DriverApi& api, CUcontext ctx) {
  const std::string where = l.field + " (" + l.name_expression + ")";
  // The translation unit that holds this launch's kernel for the call's dtype.
  std::size_t u = 0;
  if (!state.unit_of.empty()) {
    const auto it = state.unit_of.find({plan.dtype, l.index});
    if (it == state.unit_of.end())
      throw Error(ErrorKind::internal, "package " + state.manifest.name + ": no compile unit for " +
                                           where + " and dtype " + dtype_name(plan.dtype));
    u = it->second;
  }
  const auto& unit = state.units.at(u);
  const std::string& cubin = unit.cubin;
  LoadedModule& loaded = module_cache().modules[{unit.key, ctx}];
  if (!loaded.module) {
    with_context("loading its CUBIN (" + std::to_string(cubin.size()) + " bytes)",
                 [&] { KGATE_DRIVER_CALL(api.ModuleLoadData(&loaded.module, cubin.data())); });
  }
  std::string lowered = l.lowered_name;
  if (const auto own = unit.lowered_names.find(l.name_expression);
      own != unit.lowered_names.end() && !own->second.empty())
    lowered = own->second;
  CUfunction& f = loaded.functions[lowered];
  if (!f)
    with_context(where, [&] {
      KGATE_DRIVER_CALL(api.ModuleGetFunction(&f, loaded.module, lowered.c_str()));
    });
  if (loaded.params_checked.insert({f, l.index}).second) {
    try {
      const auto read = unit.params.find(lowered);
      check_parameters(f, l, read == unit.params.end() ? nullptr : &read->second);
    } catch (...) {
      loaded.params_checked.erase({f, l.index});
      throw;
    }
  }
  return {f, &loaded};
}

/// The function of a launch compiled into the program by nvcc: its host stub's function in this
/// context (cudaGetFuncBySymbol), its parameters checked once. Under module_cache's lock.
std::pair<CUfunction, LoadedModule*> compiled_function(const PackageState& state,
                                                       const PlannedLaunch& l, CUcontext ctx) {
  LoadedModule& loaded = module_cache().modules[{"compiled " + state.manifest.name, ctx}];
  CUfunction& f = loaded.functions[l.name_expression];
  if (!f) {
    const auto stub = state.host_functions.find(l.name_expression);
    if (stub == state.host_functions.end() || !stub->second)
      throw Error(ErrorKind::internal,
                  l.field + ": kernel \"" + l.name_expression +
                      "\" was not compiled into the build; please report this");
    cudaFunction_t function = nullptr;
    with_context(l.field + " (" + l.name_expression + ")",
                 [&] { KGATE_CUDA_CALL(cudaGetFuncBySymbol(&function, stub->second)); });
    f = reinterpret_cast<CUfunction>(function);
  }
  if (loaded.params_checked.insert({f, l.index}).second) {
    try {
      check_parameters(f, l, nullptr);
    } catch (...) {
      loaded.params_checked.erase({f, l.index});
      throw;
    }
  }
  return {f, &loaded};
}

/// A launch's function attributes, each set once per function and value: the dynamic shared
/// memory limit as the kernel's host code states it ("max_dynamic_shared_mem"), else raised by
/// kgate to what the launch needs past 48 KiB (which the kernel's own host code must also do: the
/// report says so), and the preferred carveout. Under module_cache's lock.
void set_attributes(const PackageState& state, const LaunchPlan& plan, const PlannedLaunch& l,
                    CUfunction f, LoadedModule& loaded, const cuda::DriverApi& api) {
  const std::string where = l.field + " (" + l.name_expression + ")";
  const Launch& declared = state.manifest.launches[l.index];
  const bool stated = l.max_dynamic_shared_mem.has_value();
  const uint32_t limit = stated ? *l.max_dynamic_shared_mem : l.shared_mem;
  const auto set = loaded.dynamic_shared_set.find(f);
  if (stated ? (set == loaded.dynamic_shared_set.end() || set->second != limit)
             : (l.shared_mem > cuda_limits::kSharedPerBlockDefault &&
                (set == loaded.dynamic_shared_set.end() || set->second < limit))) {
    int device = 0, optin = 0;
    KGATE_CUDA_CALL(cudaGetDevice(&device));
    KGATE_CUDA_CALL(
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    const std::string text =
        stated ? "max_dynamic_shared_mem \"" + declared.max_dynamic_shared_mem->text() + "\""
               : "shared_mem \"" + declared.shared_mem.text() + "\"";
    if (static_cast<int64_t>(limit) > optin)
      throw Error(
          ErrorKind::package,
          where + ": " + text + " = " + std::to_string(limit) +
              " bytes is above the device's limit of " + std::to_string(optin) +
              " bytes of shared memory per block [" + values_text(plan.symbols) +
              "]; narrow guard.shapes so that it fits, or pick a smaller tile with a launch's "
              "\"when\": {\"if\": \"device_smem_per_block_optin >= ...\"}");
    with_context(
        where + ": setting CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to " +
            std::to_string(limit) + " (the kernel's static shared memory counts too)",
        [&] {
          KGATE_DRIVER_CALL(api.FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                 static_cast<int>(limit)));
        });
    loaded.dynamic_shared_set[f] = limit;
    if (!stated)
      state.notes->add(
          l.field + " (" + l.name_expression +
          "): kgate raised the kernel's dynamic shared memory "
          "limit to " +
          std::to_string(limit) +
          " bytes, past the 48 KiB a launch gets without it; "
          "the kernel's own host code must do the same (cudaFuncSetAttribute with "
          "cudaFuncAttributeMaxDynamicSharedMemorySize), and \"max_dynamic_shared_mem\" states it");
  }
  if (l.carveout && loaded.carveout_set.insert({f, *l.carveout}).second)
    with_context(where + ": setting CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT to " +
                     std::to_string(*l.carveout),
                 [&] {
                   KGATE_DRIVER_CALL(api.FuncSetAttribute(
                       f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, *l.carveout));
                 });
}

void launch_package(const PackageState& state, const KernelCall& call) {
  const std::string& name = state.manifest.name;
  LaunchPlan plan = plan_launches(state.manifest, state.op, state.lowered_names, call);
  const auto& api = cuda::driver();
  const auto stream = static_cast<cudaStream_t>(call.stream);

  // Load the module (once per context) and resolve the functions, attributes and checks.
  std::vector<CUfunction> functions(plan.launches.size(), nullptr);
  with_context("package " + name, [&] {
    std::lock_guard<std::mutex> lock(module_cache().mutex);
    const CUcontext ctx = current_context(api);
    for (std::size_t i = 0; i < plan.launches.size(); ++i) {
      const PlannedLaunch& l = plan.launches[i];
      const auto [f, loaded] = state.host_functions.empty()
                                   ? module_function(state, plan, l, api, ctx)
                                   : compiled_function(state, l, ctx);
      functions[i] = f;
      set_attributes(state, plan, l, f, *loaded, api);
    }
  });

  // Workspaces, then the launches in order on the call's stream.
  WorkspaceAllocations workspaces(stream);
  with_context("package " + name + ": workspace", [&] {
    for (std::size_t w = 0; w < plan.workspaces.size(); ++w) {
      const auto& ws = plan.workspaces[w];
      plan.bind_workspace(w, ws.bytes > 0 ? workspaces.allocate(static_cast<std::size_t>(ws.bytes),
                                                                ws.dtype, ws.start)
                                          : nullptr);
    }
  });
  for (std::size_t i = 0; i < plan.launches.size(); ++i) {
    PlannedLaunch& l = plan.launches[i];
    if (l.empty) continue;
    auto params = l.kernel_params();
    try {
      if (l.cluster[0] == 0) {
        KGATE_DRIVER_CALL(api.LaunchKernel(functions[i], l.grid[0], l.grid[1], l.grid[2],
                                           l.block[0], l.block[1], l.block[2], l.shared_mem, stream,
                                           params.data(), nullptr));
      } else {  // a thread-block cluster ("cluster"): cuLaunchKernelEx with its dimensions
        if (!api.LaunchKernelEx)
          throw Error(ErrorKind::device,
                      "the driver has no cuLaunchKernelEx, which cluster launches need");
        CUlaunchAttribute attr{};
        attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attr.value.clusterDim.x = l.cluster[0];
        attr.value.clusterDim.y = l.cluster[1];
        attr.value.clusterDim.z = l.cluster[2];
        CUlaunchConfig config{};
        config.gridDimX = l.grid[0];
        config.gridDimY = l.grid[1];
        config.gridDimZ = l.grid[2];
        config.blockDimX = l.block[0];
        config.blockDimY = l.block[1];
        config.blockDimZ = l.block[2];
        config.sharedMemBytes = l.shared_mem;
        config.hStream = stream;
        config.attrs = &attr;
        config.numAttrs = 1;
        KGATE_DRIVER_CALL(api.LaunchKernelEx(&config, functions[i], params.data(), nullptr));
      }
    } catch (const Error& e) {  // the context is only built on failure: launches are timed
      throw Error(e.kind(), "package " + name + ": " + l.field + " (" + l.name_expression +
                                ", grid " + std::to_string(l.grid[0]) + "x" +
                                std::to_string(l.grid[1]) + "x" + std::to_string(l.grid[2]) +
                                ", block " + std::to_string(l.block[0]) + "x" +
                                std::to_string(l.block[1]) + "x" + std::to_string(l.block[2]) +
                                ", " + std::to_string(l.shared_mem) + " bytes of shared memory [" +
                                values_text(plan.symbols) + "]): " + e.what());
    }
  }
}

// Every CUBIN (in unit order) and the manifest as parsed, less what names the package (name,
// version, description): two packages with equal digests launch the same code the same way.
std::string code_digest(const PackageManifest& manifest, const PackageState& state) {
  std::string text;
  for (const auto& u : state.units) text += "unit " + sha256_hex(u.cubin) + "\n";
  try {
    std::ifstream in(manifest.manifest_path);
    nlohmann::json j = nlohmann::json::parse(in);
    for (const char* key : {"name", "version", "description"}) j.erase(key);
    text += j.dump();
  } catch (const std::exception&) {
    return {};  // no digest: never UNCHANGED
  }
  return sha256_hex(text);
}

}  // namespace

namespace {

/// What a package's KernelInfo says whichever compiler built its kernels.
KernelInfo package_kernel_info(const std::shared_ptr<const PackageState>& shared) {
  const PackageManifest& manifest = shared->manifest;
  KernelInfo k;
  k.name = manifest.name;
  k.op = manifest.op;
  k.backend = Backend::cuda;
  k.dtypes = manifest.guard.dtypes;
  k.found_sizes = manifest_sizes(manifest, shared->op);
  k.accepts_strided =
      true;  // outside guard.layouts the call falls back: layout cases test both sides
  k.accepts_unaligned = true;
  k.source = manifest.dir.string();
  k.output_start = manifest.output_start;
  k.case_launches = [shared](const Case& c) {
    std::vector<std::string> out;
    if (const std::string why = case_guard_violation(shared->manifest, shared->op, c); !why.empty())
      return std::vector<std::string>{"fallback (outside the guard: " + why + ")"};
    for (const auto& l : case_launches(shared->manifest, shared->op, c)) out.push_back(describe(l));
    return out;
  };
  k.device_props = [] { return device_props_json(device_props_in_effect()); };
  k.notes = [notes = shared->notes] { return notes->get(); };
  k.accepts = [shared](const KernelCall& call) {
    return call_guard_violation(shared->manifest, shared->op, call).empty();
  };
  k.rejection_reason = [shared](const KernelCall& call) {
    return call_guard_violation(shared->manifest, shared->op, call);
  };
  k.launch = [shared](const KernelCall& call) { launch_package(*shared, call); };
  k.guard_cases = [shared](uint64_t seed) {
    return guard_boundary_cases(shared->manifest, shared->op, seed, kMaxGuardCaseElements);
  };
  return k;
}

void check_op_of(const PackageManifest& manifest, const OpSignature& op, const char* caller) {
  if (manifest.op != op.name)
    throw Error(ErrorKind::internal, std::string(caller) + ": package " + manifest.name +
                                         " implements op '" + manifest.op + "', not '" + op.name +
                                         "'");
}

}  // namespace

KernelInfo make_package_kernel(const PackageManifest& manifest, const CompileResult& compiled,
                               const OpSignature& op) {
  check_op_of(manifest, op, "make_package_kernel");
  if (compiled.cubin.empty())
    throw Error(ErrorKind::package,
                "package " + manifest.name + " (" + manifest.manifest_path.string() +
                    "): the compile result holds no CUBIN; compile it first (kgate validate)");
  auto state = std::make_shared<PackageState>();
  state->manifest = manifest;
  state->op = op;
  state->lowered_names = compiled.lowered_names;
  if (compiled.units.empty()) {
    state->units.push_back({compiled.key.empty() ? sha256_hex(compiled.cubin) : compiled.key,
                            compiled.cubin, compiled.params, compiled.lowered_names});
  } else {
    for (const auto& u : compiled.units)
      state->units.push_back(
          {u.key.empty() ? sha256_hex(u.cubin) : u.key, u.cubin, u.params, u.lowered_names});
    state->unit_of = compiled.unit_of;
  }
  KernelInfo k = package_kernel_info(state);
  k.package = true;
  k.code_digest = code_digest(manifest, *state);
  return k;
}

KernelInfo make_compiled_package_kernel(const PackageManifest& manifest, const OpSignature& op,
                                        const std::map<std::string, const void*>& functions) {
  check_op_of(manifest, op, "make_compiled_package_kernel");
  if (compile_units(manifest).size() > 1)
    throw Error(ErrorKind::package,
                "package " + manifest.name +
                    ": its dtypes or launches have NVRTC options of their "
                    "own (several translation units), which one nvcc compile cannot give");
  auto state = std::make_shared<PackageState>();
  state->manifest = manifest;
  state->op = op;
  for (const auto& name : manifest.name_expressions()) {
    const auto it = functions.find(name);
    if (it == functions.end() || !it->second)
      throw Error(ErrorKind::package,
                  "package " + manifest.name + ": kernel \"" + name +
                      "\" was not compiled into the build (rebuild: the manifest changed)");
    state->lowered_names[name] = name;
    state->host_functions[name] = it->second;
  }
  return package_kernel_info(state);
}

KernelInfo compiled_package_kernel(const CompiledPackage& p) {
  KernelInfo k;
  k.name = p.kernel;
  k.op = p.op;
  k.backend = Backend::cuda;
  k.source = p.source;
  k.timed = p.timed;
  k.mutant = p.mutant || p.control;
  k.control = p.control;
  const std::string text(p.manifest, p.manifest_size);
  std::map<std::string, const void*> functions;
  for (std::size_t i = 0; i < p.function_count; ++i)
    functions[p.functions[i].name_expression] = p.functions[i].function;
  const std::vector<int64_t> tiles(p.tile_sizes, p.tile_sizes + p.tile_count);
  const auto lookup = p.lookup_op;
  k.complete = [text, functions, tiles, lookup](KernelInfo& info) {
    ManifestCheckOptions options;
    options.manifest_text = text;
    options.find_op = lookup;
    PackageManifest manifest;
    try {
      manifest = load_manifest(info.source, options);
    } catch (const Error& e) {
      throw Error(e.kind(), std::string("its manifest, as built:\n") + e.what());
    }
    const OpSignature* op = lookup(manifest.op);
    if (!op) throw Error(ErrorKind::package, "unknown op '" + manifest.op + "'");
    KernelInfo full = make_compiled_package_kernel(manifest, *op, functions);
    full.name = info.name;  // the kernel's name, not the package's
    full.source = info.source;
    full.op_file = info.op_file;
    full.timed = info.timed;
    full.mutant = info.mutant;
    full.control = info.control;
    full.expected_catch = info.expected_catch;
    for (const int64_t t : tiles)
      if (std::find(full.tile_sizes.begin(), full.tile_sizes.end(), t) == full.tile_sizes.end())
        full.tile_sizes.push_back(t);
    std::sort(full.tile_sizes.begin(), full.tile_sizes.end());
    info = std::move(full);
  };
  return k;
}

}  // namespace kgate::package
