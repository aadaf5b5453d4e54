// The launch plan of a package call: every launch of its manifest that runs, with its grid, block,
// shared memory and argument bytes, and the workspaces it needs.
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
    internal::bind_call_symbols(m_, op_, call_, dims, rank);
    for (const auto& [name, v] : dims) plan.symbols[name] = v;
    for (const auto& a : m_.attributes)
      if (a.is_integer) plan.symbols[a.name] = static_cast<int64_t>(a.value);
    symbols_ = &plan.symbols;
    values_ = plan.symbols;
    values_[kDtypeSizeSymbol] = static_cast<int64_t>(dtype_size(plan.dtype));
    if (m_.reads_device) put_device_values(values_, device_props_in_effect());
    // For when.if; only a package with conditions reads them.
    if (std::any_of(m_.launches.begin(), m_.launches.end(), [](const Launch& l) {
          return l.when.if_expr.has_value() || !l.assumes.empty();
        }))
      for (const auto& [k, v] : call_tensor_values(op_, call_)) values_[k] = v;
    layout_ = call_layout(call_);

    for (std::size_t w = 0; w < m_.workspace.size(); ++w) plan.workspaces.push_back(workspace(w));
    for (std::size_t i = 0; i < m_.launches.size(); ++i) {
      if (!runs(i)) {
        plan.skipped.push_back(i);
        continue;
      }
      // A binary compiled for a specialization the call breaks would run out of its contract.
      if (const std::string v = launch_assumption_violation(m_.launches[i], values_); !v.empty())
        fail(launch_field(i) + ".assumes",
             v + ": the call is inside the guard but outside the specialization this launch's "
                 "binary was compiled for (its guard is wider; kgate validate names this)");
      plan.launches.push_back(launch(i, plan));
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
                                        internal::values_text(*symbols_) + "]");
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
    p.cooperative = l.cooperative;
    p.pdl = l.pdl;
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
        const internal::TensorRef t = internal::find_tensor(op_, arg.name);
        if (!t.spec) fail(field, "op '" + op_.name + "' has no tensor \"" + arg.name + "\"");
        const uint64_t bits = reinterpret_cast<uintptr_t>(internal::view_of(call_, t).data);
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
          fail(field, "attribute " + arg.name + "=" + internal::number(v) +
                          " is not an integer; it cannot be passed as " +
                          scalar_type_name(arg.type));
        integer_or_float(p, std::move(out), arg.type, v,
                         is_integer(arg.type) ? static_cast<int64_t>(v) : 0, is_integer(arg.type));
        return;
      }
      case KernelArg::Kind::stride: {
        out.description = "stride of " + arg.name + " dimension " + std::to_string(arg.dim) +
                          " as " + scalar_type_name(arg.type);
        const internal::TensorRef t = internal::find_tensor(op_, arg.name);
        if (!t.spec) fail(field, "op '" + op_.name + "' has no tensor \"" + arg.name + "\"");
        const TensorView& view = internal::view_of(call_, t);
        const int d = internal::resolve_dim(arg.dim, view.dim());
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
      fail(a.field, a.description + ": the value " +
                        (exact ? std::to_string(i) : internal::number(f)) + " does not fit in " +
                        scalar_type_name(type) + " (" + range + ")");
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

}  // namespace kgate::package
