// Case generators: every case is a pure function of (op signature, kernel traits, master seed, index).
// Families: random shapes, ragged shapes (0, 1, 2, primes, 2^k +- 1, tile sizes +- 1, very long rows),
// extreme-range values, special values (+-0, +-Inf, NaN), and layouts (strided, misaligned).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/case.hpp"
#include "core/op_signature.hpp"

namespace kgate::props {

/// What the kernel under test accepts; cases outside it are not generated.
struct KernelTraits {
  std::vector<DType> dtypes;        ///< empty: every dtype of the op
  std::vector<int64_t> tile_sizes;  ///< ragged cases put these +-1 on the reduced symbol
  bool accepts_strided = false;
  bool accepts_unaligned = true;
};

/// The generator families, in the order their GoogleTest suites run.
inline const std::vector<std::string>& all_families() {
  static const std::vector<std::string> families = {"random", "ragged", "extreme", "special", "layout"};
  return families;
}

struct GeneratorOptions {
  uint64_t seed = 0;
  int64_t cases = 64;                  ///< total over all families and dtypes
  std::vector<std::string> families;   ///< empty: all that apply to the op and kernel
  int64_t max_elements = int64_t{1} << 24;  ///< per input tensor
};

/// Families that apply: special needs a NaN contract of "propagate", layout needs a kernel that
/// accepts strided or unaligned inputs.
std::vector<std::string> applicable_families(const OpSignature& op, const KernelTraits& traits);

/// Generates `options.cases` cases spread over the applicable families and supported dtypes.
std::vector<Case> generate_cases(const OpSignature& op, const KernelTraits& traits,
                                 const GeneratorOptions& options);

/// Generates the cases of one family (as the per-family GoogleTest suites do).
std::vector<Case> generate_family(const OpSignature& op, const KernelTraits& traits,
                                  const std::string& family, int64_t count, uint64_t seed,
                                  int64_t max_elements = int64_t{1} << 24);

/// True when the case's dims respect the op's domain beyond min/max: every symbol's multiple_of
/// and every relation ("H % G == 0").
bool in_domain(const OpSignature& op, const Case& c);

/// The ragged sizes for a symbol: 0 (if allowed), 1, 2, small primes, 2^k +- 1, tile +- 1, max;
/// all within [domain.min, domain.max], sorted and unique.
std::vector<int64_t> ragged_sizes(const SymbolDomain& domain, const std::vector<int64_t>& tile_sizes);

}  // namespace kgate::props
