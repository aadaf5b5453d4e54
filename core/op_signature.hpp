// The host-side description of an op: its tensors, symbolic shapes, shape domain, tolerances and
// contracts. The ATen reference and fp64 oracle live beside it in references/ (torch side).
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
};

/// A tensor of the op, with a symbolic shape such as {"B", "N"}.
struct TensorSpec {
  std::string name;
  std::vector<std::string> shape;
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
  std::map<std::string, double> attributes;  ///< attribute defaults, e.g. dim = -1
  NanContract nan_contract = NanContract::propagate;
  /// The correctness rule used unless a config or the command line says otherwise. "ref_ratio"
  /// for ops whose eager low-precision reference is itself less accurate than a good kernel.
  std::string default_rule = "allclose";
  bool deterministic = true;

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
    case DType::f16: return {1e-5, 1e-3};
    case DType::bf16: return {1e-5, 1.6e-2};
    case DType::f32: return {1e-5, 1.3e-6};
    case DType::f64: return {1e-7, 1e-7};
    default: return {0, 0};
  }
}

}  // namespace kgate
