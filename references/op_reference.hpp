// The torch side of an op: how to build its inputs for a case, its eager ATen reference (in the
// case's dtype) and its float64 oracle. One file per op defines <op>_signature() and
// <op>_reference().
#pragma once

// The tensor type only: each op file includes the ATen/ops/<op>.h headers it calls (ATen.h costs
// every translation unit that includes this one about 7 s of a 2-core build).
#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/case.hpp"
#include "core/error.hpp"
#include "core/op_signature.hpp"

namespace kgate {

using Attributes = std::map<std::string, double>;
using Tensors = std::vector<at::Tensor>;

struct OpReference {
  /// Inputs of the case, in signature order, on `device`, with the case's dtype, values and layout.
  std::function<Tensors(const Case&, const OpSignature&, at::Device)> make_inputs;
  /// The eager reference in the case's dtype. Attributes are call_attributes(op, case).
  std::function<Tensors(const Tensors&, const Attributes&)> eager;
  /// The same math in float64 (inputs are upcast by the caller, integer inputs too: an op with
  /// integer inputs, such as embedding indices, casts them back).
  std::function<Tensors(const Tensors&, const Attributes&)> oracle;
  /// Optional, for ops that declare conditioning (OpSignature::conditioning_terms): per output,
  /// sum |terms| of each element's sum, in float64, from the inputs upcast as for the oracle.
  /// nullptr: the oracle on the inputs' absolute values (right where every term is a product of
  /// inputs, added: matmul, a sum of squares; not where terms are subtracted, as in rotary).
  std::function<Tensors(const Tensors&, const Attributes&)> magnitude;
};

/// A reference (an op file's TorchScript) that failed on a case: the op file's problem, never the
/// kernel's. The runner reports the case as a reference error and goes on.
class ReferenceError : public Error {
 public:
  explicit ReferenceError(const std::string& message) : Error(ErrorKind::usage, message) {}
};

/// The torch side of an op; throws a usage Error for an unknown op.
const OpReference& op_reference(const std::string& name);

/// The inputs of case `c`: ref.make_inputs, or for captured values (Values::captured) the
/// tensors of its safetensors file, as stored, on `device`.
Tensors case_inputs(const OpReference& ref, const Case& c, const OpSignature& op,
                    at::Device device);

/// Values of one family for a tensor of `sizes`, drawn in float64 on `device` from `seed` by a
/// counter-based generator (counter_rng.hpp: element i depends only on seed and i, so a case has
/// the same values on every run and GPU, and the GPU draws them in one launch), then cast to
/// `dtype`. `extreme_magnitude` is the op's scale for the extreme family (e.g. half the dtype's
/// max for softmax logits). The last dim is the "row". Into a float dtype every family is drawn
/// straight in one pass (two for clustered_max: the rows' maxima first), equal bit for bit to
/// make_values_chained's (a NaN's payload aside): no float64 tensor, none of ATen's kernels.
at::Tensor make_values(Values family, at::IntArrayRef sizes, DType dtype, uint64_t seed,
                       double extreme_magnitude, at::Device device = at::kCPU);

/// Whether make_values draws into `dtype` directly (a float dtype), with no float64 tensor.
bool values_drawn_directly(DType dtype);

/// make_values as a chain of ATen operators on a float64 draw: what the direct draw must equal
/// (the references test's Values suite), and the route of the dtypes that are not floating.
at::Tensor make_values_chained(Values family, at::IntArrayRef sizes, DType dtype, uint64_t seed,
                               double extreme_magnitude, at::Device device = at::kCPU);

/// Lays `t` (contiguous, on any device) out per the case's layout on `device`: strided = every
/// other element of a buffer twice as wide in the last dim; offset = one element into the storage;
/// padded = the first columns of a buffer kPaddedLayoutElements wider (rank >= 2; contiguous
/// below); offset16 = 16 bytes into the storage (1 element for 8-byte types and wider).
at::Tensor apply_layout(const at::Tensor& t, Layout layout, at::Device device);

at::ScalarType to_scalar_type(DType dtype);
DType from_scalar_type(at::ScalarType type);

/// Concrete sizes of a symbolic shape under a case's dims. Each dim is a symbol ("N"), an integer,
/// or a small expression of them: products and sums ("2*H", "G*CG", "S+1").
std::vector<int64_t> concrete_shape(const std::vector<std::string>& shape, const Case& c);

/// The attributes of a call on case `c`: the op's attributes, plus every shape symbol of the case
/// by name (e.g. OH, OW of adaptive_avg_pool2d), so that references and kernels can read sizes no
/// input tensor carries. An op attribute wins over a symbol of the same name.
Attributes call_attributes(const OpSignature& op, const Case& c);

/// Values for normalization ops (layer_norm, rms_norm, group_norm): as make_values, except
///  - extreme: magnitudes up to min(dtype max / 2, 1e15), so that squares summed over a row of up
///    to 2^18 elements stay finite in float accumulation (the eager reference accumulates in float;
///    beyond that it returns b, not the normalized row, and the comparison would be meaningless);
///  - large_mean: mean 1000, spread 1000 / mean_to_spread. A float two-pass or Welford kernel keeps
///    the mean to an ulp of 1000, i.e. an error of ulp(1000) * mean_to_spread / 1000 in the output;
///    mean_to_spread = 16 keeps that (and the eager reference's own drift) well under the f32
///    tolerance while one-pass E[x^2] - E[x]^2 loses log2(16^2) = 8 bits and fails it;
///  - all_equal: with zero_constant, every element is 0 (a zero-variance row, e.g. padding): ATen's
///    vectorized Welford can move the mean of a non-zero constant row by an ulp, which 1/sqrt(eps)
///    amplifies ~316x past the f32 tolerance, so only zero rows have an exact reference.
at::Tensor make_norm_values(Values family, at::IntArrayRef sizes, DType dtype, uint64_t seed,
                            double mean_to_spread, bool zero_constant,
                            at::Device device = at::kCPU);

/// N(mean, stddev^2) values of `sizes` in `dtype`, drawn on `device` from `seed` (weights, biases).
at::Tensor make_normal(at::IntArrayRef sizes, DType dtype, uint64_t seed, double mean,
                       double stddev, at::Device device = at::kCPU);

}  // namespace kgate
