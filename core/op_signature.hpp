// The host-side description of an op: its tensors, symbolic shapes, shape domain, tolerances and
// contracts. The ATen reference and fp64 oracle live beside it in references/ (torch side) for the
// built-in ops, or in an op file (core/op_file.hpp, TorchScript) for ops written as data.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace kgate {

/// A shape symbol such as N with the range the generators draw from.
struct SymbolDomain {
  std::string name;
  int64_t min = 1;
  int64_t max = 1;
  int64_t typical_max = 0;  ///< random cases stay below this (0: max); ragged cases may reach max
  int64_t multiple_of = 1;  ///< every drawn value is a multiple of this (head sizes, vector widths)
};

/// How an input's values are drawn for a case (op files; the built-in ops draw in C++). Every kind
/// is a pure function of the case (seed, dims, dtype, value family), drawn by the counter-based
/// generator, so a case id replays bitwise.
struct ValueDraw {
  /// "case": the case's value family (normal, extreme, special, ...) as the built-in row ops draw
  ///         it; extreme magnitude `extreme` (0: half the dtype's max).
  /// "norm": as "case" with the normalization ops' refinements (make_norm_values): large_mean keeps
  ///         `mean_to_spread`, all_equal rows are zero with `zero_constant`.
  /// "normal": N(mean, std^2) whatever the family (weights, biases).
  /// "uniform": U[low, high) whatever the family.
  /// "positive": |case values| + `low` (variances, scales).
  /// "integers": integers in [low_expr, high_expr] (expressions of the shape symbols, e.g. "V-1");
  ///         with `edges`, the first element is the top and the last the bottom of the range, and
  ///         the all_equal / clustered_max families pile onto the top (out-of-range indexing bugs).
  /// "sorted": case values sorted along the last dim. "simplex": rows that sum to one (softmax of
  ///         normal values). "permutation": each row a permutation of 0..n-1. "mask": booleans as
  ///         0/1 in the tensor's dtype, true with probability `p`.
  std::string kind = "case";
  double mean = 0, std = 1;    ///< normal
  double low = 0, high = 1;    ///< uniform; positive uses low as the floor
  double extreme = 0;          ///< case/norm: extreme-family magnitude (0: half the dtype's max)
  double mean_to_spread = 16;  ///< norm
  bool zero_constant = false;  ///< norm
  std::string low_expr = "0", high_expr = "0";  ///< integers
  bool edges = true;                            ///< integers
  double p = 0.5;                               ///< mask
  /// The generator stream: "" = the case's seed for the first input, else one derived from the
  /// tensor's name (as the built-in ops do), so that adding an input does not move the others.
  std::string seed_from;
};

/// A tensor of the op, with a symbolic shape such as {"B", "N"}.
struct TensorSpec {
  std::string name;
  std::vector<std::string> shape;
  /// "" : the case's dtype; else a fixed dtype ("i64" indices, "f32" scales, ...).
  std::string dtype;
  ValueDraw values;  ///< inputs of op files: how values are drawn
  /// Inputs: keep this dtype in the oracle (integer and bool inputs always do; floating inputs are
  /// upcast to float64 unless this is set).
  bool keep_dtype_in_oracle = false;
  /// Outputs: the input this output is written into (in place), e.g. a residual updated by a
  /// fused add + norm. The kernel gets the input's buffer as the output; the references see the
  /// input as it was, and their result for this output is what the buffer must hold afterwards.
  std::string alias;
  /// Integer outputs: the input this output indexes along its last dim (top-k indices). Such an
  /// output is judged by the values it selects: every index in [0, n), no index twice in a row,
  /// and the selected values equal those the reference's indices select, in order when
  /// `index_order` is "reference" (ties may swap, their values being equal), as sorted rows when
  /// it is "any".
  std::string index_into;
  std::string index_order = "reference";
};

/// allclose tolerance: |out - ref| <= atol + rtol * |ref|.
struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

/// How non-finite inputs must show up in the output.
enum class NanContract {
  propagate,  ///< the output's NaN/Inf positions must match the reference's exactly
  ignore,     ///< non-finite values are outside the op's domain: never generated
};

struct OpSignature {
  std::string name;
  std::string summary;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<SymbolDomain> symbols;
  /// The symbol the op reduces over (row length): ragged cases put tile sizes +-1 here.
  std::string reduced_symbol;
  std::vector<DType> dtypes;
  std::map<DType, Tolerance> tolerance;  ///< defaults, as torch.testing.assert_close
  /// The tolerance grows with this symbol: atol and rtol times value(symbol) ^ power in each case
  /// (a K-long reduction's rounding error grows as sqrt(K): power 0.5). "" : fixed.
  std::string tolerance_scale_symbol;
  double tolerance_scale_power = 0;
  std::map<std::string, double> attributes;  ///< attribute defaults, e.g. dim = -1
  NanContract nan_contract = NanContract::propagate;
  /// The correctness rule used unless a config or the command line says otherwise. "ref_ratio"
  /// for ops whose eager low-precision reference is itself less accurate than a good kernel.
  std::string default_rule = "allclose";
  /// Conditioning, for ops whose outputs are sums of products (matmul, a norm's sum of squares,
  /// rotary): how many terms each output element sums, as an integer expression of the shape
  /// symbols ("K", "2"); "" when the op declares none. The conditioned rule reads it, with the
  /// op's magnitude (sum |terms| per output element: its reference's magnitude function, or the
  /// oracle on |inputs|, which is that sum for ops whose terms are products of inputs).
  std::string conditioning_terms;
  /// Conditioning: the terms are rounded and summed in the case's dtype (an op whose declared
  /// arithmetic is in it, as Hugging Face's and Liger's RoPE in bf16), not in float32: the
  /// conditioned allowance then scales the magnitude by the case dtype's epsilon.
  bool accumulate_in_case_dtype = false;
  bool deterministic = true;
  /// Relations between symbols that every case satisfies, as integer expressions ("H % G == 0").
  std::vector<std::string> relations;
  /// Shapes the speed gate times (symbol -> value; empty: the default rows-by-columns guess).
  std::vector<std::vector<std::pair<std::string, int64_t>>> speed_shapes;
  /// Speed of light: the bytes any correct kernel must read and write for a case, as integer
  /// expressions over the shape symbols, `dtype_size` (the case dtype's bytes) and `bytes_T` (the
  /// bytes of op tensor T). A gather reads the rows it gathers, not its whole table. Timing
  /// reports each case's fraction of the device's copy bandwidth, and a cold-cache time below
  /// the floor is INVALID. "" and "": no floor declared.
  std::string min_bytes_read, min_bytes_written;
  /// Where the op comes from: "built-in", or the op file's path.
  std::string origin = "built-in";

  /// Index of the input output `o` is written into, or -1 when it is a tensor of its own.
  int alias_input(const TensorSpec& o) const {
    if (o.alias.empty()) return -1;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].name == o.alias) return static_cast<int>(i);
    return -1;
  }

  /// The dtype of tensor `t` in a case of dtype `case_dtype`.
  DType tensor_dtype(const TensorSpec& t, DType case_dtype) const {
    return t.dtype.empty() ? case_dtype : parse_dtype(t.dtype);
  }

  const SymbolDomain* symbol(const std::string& name) const {
    for (const auto& s : symbols)
      if (s.name == name) return &s;
    return nullptr;
  }
  Tolerance tolerance_for(DType dtype) const {
    auto it = tolerance.find(dtype);
    return it == tolerance.end() ? Tolerance{1e-5, 1.3e-6} : it->second;
  }
};

/// Default allclose tolerances per dtype, the same as torch.testing.assert_close.
inline Tolerance assert_close_tolerance(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return {1e-5, 1e-3};
    case DType::bf16:
      return {1e-5, 1.6e-2};
    case DType::f32:
      return {1e-5, 1.3e-6};
    case DType::f64:
      return {1e-7, 1e-7};
    default:
      return {0, 0};
  }
}

}  // namespace kgate
