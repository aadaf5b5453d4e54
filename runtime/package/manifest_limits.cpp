// What can never run: CUDA's limits (grid, block, shared memory, clusters, parameter bytes) for
// constant launch settings, expressions that fail for every call, and each launch and workspace at
// the largest call the guard admits (manifest_check.hpp lists the passes).
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/cuda_limits.hpp"
#include "core/error.hpp"
#include "runtime/package/device_props.hpp"
#include "runtime/package/manifest_check.hpp"

namespace kgate::package::check {
namespace {

std::size_t argument_bytes(const KernelArg& a) {
  switch (a.kind) {
    case KernelArg::Kind::tensor:
    case KernelArg::Kind::workspace:
      return 8;
    default:
      break;
  }
  switch (a.type) {
    case ScalarType::i32:
    case ScalarType::u32:
    case ScalarType::f32:
      return 4;
    default:
      return 8;
  }
}

/// The axes (x, y, z) of a grid, block or cluster, each judged and, where it is a constant, within
/// 1 to its limit (a problem names the axis otherwise). Returns their product when every axis is a
/// constant within its limit (saturating at int64's largest value), else nullopt.
std::optional<int64_t> axes_within(CheckState& st, const std::vector<Expr>& axes,
                                   const std::string& field, const char* what,
                                   const int64_t (&limit)[3]) {
  int64_t product = 1;
  bool constant = true;
  for (std::size_t d = 0; d < axes.size() && d < 3; ++d) {
    const auto v = judge(st, axes[d], at(field, d));
    if (!v) {
      constant = false;
    } else if (*v < 1 || *v > limit[d]) {
      st.problem(at(field, d), std::string("a ") + what + "'s " + cuda_limits::kAxis[d] +
                                   " size is 1 to " + std::to_string(limit[d]) + "; found " +
                                   std::to_string(*v));
      constant = false;
    } else if (__builtin_mul_overflow(product, *v, &product)) {
      product = std::numeric_limits<int64_t>::max();
    }
  }
  return constant ? std::optional<int64_t>(product) : std::nullopt;
}

}  // namespace

/// More bytes than any GPU holds (2^48) for `elements` of `dtype`, without overflowing.
bool workspace_too_big(int64_t elements, DType dtype) {
  return elements > kMaxWorkspaceBytes / 8 ||
         elements * static_cast<int64_t>(dtype_size(dtype)) > kMaxWorkspaceBytes;
}

/// Evaluates `e` where it can be judged before any call: a constant is evaluated; an expression
/// of symbols is tried at a few values, and an error it gives at all of them (a constant divisor
/// of 0, an overflow) is one it gives always. Reports the error and returns nullopt; returns the
/// value of a constant.
std::optional<int64_t> judge(CheckState& st, const Expr& e, const std::string& field) {
  if (e.is_constant()) {
    try {
      return e.evaluate({});
    } catch (const Error& err) {
      st.problem(field, std::string("can never be evaluated: ") + err.what());
      return std::nullopt;
    }
  }
  std::string first;
  for (int64_t v : {int64_t{1}, int64_t{7}, int64_t{1024}}) {
    SymbolValues values;
    for (const auto& s : e.symbols()) values[s] = v;
    values[kDtypeSizeSymbol] = 4;
    try {
      e.evaluate(values);
      return std::nullopt;  // it evaluates for some call
    } catch (const Error& err) {
      if (first.empty()) first = err.what();
    }
  }
  st.problem(field, "fails for every value tried (symbols at 1, 7 and 1024): " + first);
  return std::nullopt;
}

/// Launch settings that can never run: CUDA's limits on grid, block and shared memory, checked
/// for constants, and expressions that cannot be evaluated for any call.
void check_launch_settings(CheckState& st, const Launch& launch, const std::string& field) {
  axes_within(st, launch.grid, sub(field, "grid"), "grid", cuda_limits::kGrid);
  // Each axis within its limit, then (when every axis is a constant) the threads of the block.
  if (const auto threads =
          axes_within(st, launch.block, sub(field, "block"), "block", cuda_limits::kBlock);
      threads && !launch.block.empty() && *threads > cuda_limits::kThreadsPerBlock)
    st.problem(sub(field, "block"), "a block has 1 to " +
                                        std::to_string(cuda_limits::kThreadsPerBlock) +
                                        " threads; found " + std::to_string(*threads));
  if (auto v = judge(st, launch.shared_mem, sub(field, "shared_mem"));
      v && (*v < 0 || *v > cuda_limits::kSharedPerBlockMax))
    st.problem(sub(field, "shared_mem"),
               "dynamic shared memory is 0 to " + std::to_string(cuda_limits::kSharedPerBlockMax) +
                   " bytes (227 KiB, the most any supported GPU gives a block); found " +
                   std::to_string(*v));
  if (launch.max_dynamic_shared_mem) {
    const std::string f = sub(field, "max_dynamic_shared_mem");
    const auto limit = judge(st, *launch.max_dynamic_shared_mem, f);
    if (limit && (*limit < 0 || *limit > cuda_limits::kSharedPerBlockMax))
      st.problem(f, "a dynamic shared memory limit is 0 to " +
                        std::to_string(cuda_limits::kSharedPerBlockMax) + " bytes; found " +
                        std::to_string(*limit));
    else if (const auto used = launch.shared_mem.is_constant()
                                   ? judge(st, launch.shared_mem, sub(field, "shared_mem"))
                                   : std::nullopt;
             limit && used && *used > *limit)
      st.problem(f, "is " + std::to_string(*limit) + " bytes, below the launch's shared_mem of " +
                        std::to_string(*used) +
                        ": the launch fails in the kernel's own host code too; raise the limit or "
                        "lower shared_mem");
  }
  if (!launch.cluster.empty()) {
    // A cluster's blocks: the portable size at most (more needs a non-portable opt-in).
    constexpr int64_t kClusterAxis[3] = {cuda_limits::kClusterBlocks, cuda_limits::kClusterBlocks,
                                         cuda_limits::kClusterBlocks};
    const auto blocks =
        axes_within(st, launch.cluster, sub(field, "cluster"), "cluster", kClusterAxis);
    if (blocks && *blocks > cuda_limits::kClusterBlocks)
      st.problem(sub(field, "cluster"),
                 "a cluster holds at most " + std::to_string(cuda_limits::kClusterBlocks) +
                     " blocks (the portable size); found " + std::to_string(*blocks));
  }
  if (launch.when.if_expr) judge(st, *launch.when.if_expr, sub(sub(field, "when"), "if"));
  // CUDA's kernel parameter space (32,764 bytes since CUDA 12.1 on Volta and later).
  std::size_t bytes = 0;
  for (const auto& a : launch.args) bytes += argument_bytes(a);
  if (bytes > cuda_limits::kParameterBytes)
    st.problem(sub(field, "args"), std::to_string(launch.args.size()) + " arguments take " +
                                       std::to_string(bytes) +
                                       " bytes; a kernel's parameters may "
                                       "take at most " +
                                       std::to_string(cuda_limits::kParameterBytes));
}

/// Launch settings at the largest call the guard admits (each shape symbol at its guard.shapes
/// max, else the op's): an expression that overflows int64 there, a grid axis past CUDA's limit or
/// more shared memory than a block gets would fail such calls at run time, so each is refused
/// here. A launch whose `when.if` excludes that call, and expressions of other symbols
/// (strides), are not judged.
void check_launches_at_largest_call(const ManifestSource& src, CheckState& st) {
  if (!st.op || src.launches_incomplete || st.op->symbols.empty()) return;
  SymbolValues largest;
  std::string shape;
  for (const auto& s : st.op->symbols) {
    int64_t v = s.max;
    if (auto it = st.m.guard.shapes.find(s.name);
        it != st.m.guard.shapes.end() && it->second.max > 0)
      v = std::min(v, it->second.max);
    largest[s.name] = v;
    shape += (shape.empty() ? "" : ", ") + s.name + "=" + std::to_string(v);
  }
  for (const auto& [name, value] : st.op->attributes)
    if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 9e15)
      largest.emplace(name, static_cast<int64_t>(value));
  largest[kDtypeSizeSymbol] = 8;
  // A call that guard.require leaves out is not admitted: nothing to judge there.
  for (const auto& r : st.m.guard.require) {
    try {
      if (r.evaluate(largest) == 0) return;
    } catch (const Error&) {
      return;  // names tensor symbols, or does not evaluate there
    }
  }
  const std::string where = " at the largest call the guard admits (" + shape + ")";
  for (const auto& l : st.m.launches) {
    bool failed = false;
    const auto value = [&](const Expr& e, const std::string& field) -> std::optional<int64_t> {
      if (e.is_constant()) return std::nullopt;  // judged on its own (check_launch_settings)
      for (const auto& s : e.symbols())
        if (!largest.count(s)) return std::nullopt;
      try {
        return e.evaluate(largest);
      } catch (const Error& err) {
        st.problem(field,
                   "\"" + e.text() + "\" cannot be evaluated" + where + ": " + err.what() +
                       "; bound the symbols in guard.shapes (\"max\") or compute in smaller steps");
        failed = true;
        return std::nullopt;
      }
    };
    // A launch chosen per device is judged per device (kgate validate's --device-props).
    if (l.when.if_expr && reads_device(*l.when.if_expr)) continue;
    if (l.when.if_expr) {
      const auto runs = value(*l.when.if_expr, sub(sub(l.field, "when"), "if"));
      if (failed || (runs && *runs == 0)) continue;
    }
    for (std::size_t d = 0; d < l.grid.size() && d < 3; ++d)
      if (const auto v = value(l.grid[d], at(sub(l.field, "grid"), d));
          v && *v > cuda_limits::kGrid[d])
        st.problem(at(sub(l.field, "grid"), d),
                   "\"" + l.grid[d].text() + "\" is " + std::to_string(*v) + where +
                       ", past CUDA's " + cuda_limits::kAxis[d] + "-grid limit of " +
                       std::to_string(cuda_limits::kGrid[d]) +
                       "; bound the symbols in guard.shapes" +
                       (d == 0 ? ", or give each block more work"
                               : ", or put the large count on the x axis"));
    for (std::size_t d = 0; d < l.block.size() && d < 3; ++d)
      value(l.block[d], at(sub(l.field, "block"), d));
    if (const auto v = value(l.shared_mem, sub(l.field, "shared_mem"));
        v && *v > cuda_limits::kSharedPerBlockMax)
      st.problem(sub(l.field, "shared_mem"),
                 "\"" + l.shared_mem.text() + "\" is " + std::to_string(*v) + " bytes" + where +
                     "; a block gets at most " + std::to_string(cuda_limits::kSharedPerBlockMax) +
                     ": bound the symbols in guard.shapes");
  }
  // Workspaces whose size depends on the call: their bytes at that largest call.
  for (std::size_t i = 0; i < st.m.workspace.size(); ++i) {
    const Workspace& ws = st.m.workspace[i];
    const std::string field = st.workspace_fields[i] + ".shape";
    int64_t elements = 1;
    bool known = true, depends = false;
    for (std::size_t d = 0; d < ws.shape.size() && known; ++d) {
      const Expr& e = ws.shape[d];
      depends = depends || !e.is_constant();
      for (const auto& s : e.symbols()) known = known && largest.count(s) > 0;
      if (!known) break;
      try {
        const int64_t v = e.evaluate(largest);
        if (v > 0 && __builtin_mul_overflow(elements, v, &elements))
          elements = std::numeric_limits<int64_t>::max();
      } catch (const Error& err) {
        st.problem(at(field, d), "\"" + e.text() + "\" cannot be evaluated" + where + ": " +
                                     err.what() + "; bound the symbols in guard.shapes (\"max\")");
        known = false;
      }
    }
    if (known && depends && workspace_too_big(elements, ws.dtype))
      st.problem(field, "the workspace would take more than 2^48 bytes (256 TiB)" + where +
                            ", more than any GPU holds: bound the symbols in guard.shapes");
  }
}

}  // namespace kgate::package::check
