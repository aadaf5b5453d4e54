// The torch side of an op: how to build its inputs for a case, its eager ATen reference (in the
// case's dtype) and its float64 oracle. One file per op defines <op>_signature() and <op>_reference().
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/case.hpp"
#include "core/op_signature.hpp"

namespace kgate {

using Attributes = std::map<std::string, double>;
using Tensors = std::vector<at::Tensor>;

struct OpReference {
  /// Inputs of the case, in signature order, on `device`, with the case's dtype, values and layout.
  std::function<Tensors(const Case&, const OpSignature&, at::Device)> make_inputs;
  /// The eager reference in the case's dtype.
  std::function<Tensors(const Tensors&, const Attributes&)> eager;
  /// The same math in float64 (inputs are upcast by the caller).
  std::function<Tensors(const Tensors&, const Attributes&)> oracle;
};

/// The torch side of an op; throws a usage Error for an unknown op.
const OpReference& op_reference(const std::string& name);

/// Values of one family for a tensor of `sizes`, drawn in float64 on the CPU from `seed` (so a case
/// has the same values on every device), then cast to `dtype`. `extreme_magnitude` is the op's scale
/// for the extreme family (e.g. half the dtype's max for softmax logits). The last dim is the "row".
at::Tensor make_values(Values family, at::IntArrayRef sizes, DType dtype, uint64_t seed, double extreme_magnitude);

/// Lays `t` (contiguous, on the CPU) out per the case's layout on `device`: strided = every other
/// element of a buffer twice as wide in the last dim; offset = one element into the storage.
at::Tensor apply_layout(const at::Tensor& t, Layout layout, at::Device device);

at::ScalarType to_scalar_type(DType dtype);
DType from_scalar_type(at::ScalarType type);

/// Concrete sizes of a symbolic shape under a case's dims.
std::vector<int64_t> concrete_shape(const std::vector<std::string>& shape, const Case& c);

}  // namespace kgate
