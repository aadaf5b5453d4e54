// Helpers the three parts of the package runtime share (package_guard.cpp, launch_plan.cpp,
// package_kernel.cpp): not installed, not part of the API.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/format.hpp"
#include "runtime/package/package_kernel.hpp"

namespace kgate::package::internal {

inline std::string list_of(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out + "]";
}

// Integers as integers, other values to the last digit.
inline std::string number(double v) {
  return format_number(
      v, std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.0e15 ? "%.0f" : "%.17g");
}

inline std::string values_text(const SymbolValues& values) {
  std::string out;
  for (const auto& [name, v] : values)
    out += (out.empty() ? "" : ", ") + name + "=" + std::to_string(v);
  return out.empty() ? "no symbols" : out;
}

/// The op tensor spec of that name and where its view sits in a KernelCall.
struct TensorRef {
  const TensorSpec* spec = nullptr;
  bool output = false;
  std::size_t index = 0;
};

inline TensorRef find_tensor(const OpSignature& op, const std::string& name) {
  for (std::size_t i = 0; i < op.inputs.size(); ++i)
    if (op.inputs[i].name == name) return {&op.inputs[i], false, i};
  for (std::size_t i = 0; i < op.outputs.size(); ++i)
    if (op.outputs[i].name == name) return {&op.outputs[i], true, i};
  return {};
}

inline const TensorView& view_of(const KernelCall& call, const TensorRef& ref) {
  return ref.output ? call.outputs.at(ref.index) : call.inputs.at(ref.index);
}

/// A dimension index (negative counts from the end) resolved for `rank`; -1 when out of range.
inline int resolve_dim(int dim, int64_t rank) {
  const int64_t d = dim < 0 ? rank + dim : dim;
  return d >= 0 && d < rank ? static_cast<int>(d) : -1;
}

inline std::string rank_violation(const Guard& guard, int64_t rank) {
  if (guard.ranks.empty() || std::find(guard.ranks.begin(), guard.ranks.end(),
                                       static_cast<int>(rank)) != guard.ranks.end())
    return {};
  std::vector<std::string> ranks;
  for (int r : guard.ranks) ranks.push_back(std::to_string(r));
  return "rank " + std::to_string(rank) + " is not in guard.ranks " + list_of(ranks);
}

/// Binds the manifest's symbols from a call's tensors; returns a violation ("" when all bound),
/// with `rank` set to the rank of the first bound tensor.
inline std::string bind_call_symbols(const PackageManifest& manifest, const OpSignature& op,
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

}  // namespace kgate::package::internal
