// Case generators: every case is a pure function of (op signature, kernel traits, master seed, index).
// Families: random shapes, ragged shapes (0, 1, 2, primes, 2^k +- 1, tile sizes +- 1, very long rows),
// extreme-range values, special values (+-0, +-Inf, NaN), layouts (strided, misaligned), long rows
// (the reduced symbol at its domain's max and the guard's, constant and large-mean rows: errors
// that grow with the row length), and one huge case past 2^31 elements (32-bit index arithmetic)
// on the cuda backend.
#pragma once

#include <cstdint>
#include <optional>
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
  /// The huge family applies (a device runs the kernel; the cpu backend skips it).
  bool huge = false;
};

/// A tensor past this many elements wraps 32-bit index arithmetic: each huge case holds one.
inline constexpr int64_t kHugeElements = int64_t{1} << 31;

/// The generator families, in the order their GoogleTest suites run.
inline const std::vector<std::string>& all_families() {
  static const std::vector<std::string> families = {"random", "ragged", "extreme", "special", "layout", "long"};
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

/// The most elements any tensor of the op holds in this case (saturates at INT64_MAX).
int64_t largest_tensor_numel(const OpSignature& op, const Case& c);

/// True when some tensor of the case holds more than kHugeElements elements.
inline bool is_huge(const OpSignature& op, const Case& c) { return largest_tensor_numel(op, c) > kHugeElements; }

/// The huge family's case for the op: its largest tensor just past 2^31 elements (a few rows past
/// it), contiguous normal values, the supported dtype of fewest bytes. nullopt when the op's
/// domain cannot hold such a tensor; `why` then says so.
std::optional<Case> huge_case(const OpSignature& op, const KernelTraits& traits, uint64_t seed,
                              std::string* why = nullptr);

/// The symbol a huge case of the op is judged in slices along (""): the leading dim of every
/// output and of the op's largest tensor. Every input either leads with it or is floating and
/// does not depend on it (integer inputs may index along it, as cu_seqlens does). The op's rows
/// along it are assumed independent, as they are for row, norm, gather and matmul ops.
std::string slice_symbol(const OpSignature& op);

/// The rows of `symbol` a huge case is judged on: the first rows, one in the middle, and every row
/// of the largest tensor from the one holding element 2^31 to the end (at most 64 of them).
std::vector<int64_t> huge_rows(const OpSignature& op, const Case& c, const std::string& symbol);

/// True when the case's dims respect the op's domain beyond min/max: every symbol's multiple_of
/// and every relation ("H % G == 0").
bool in_domain(const OpSignature& op, const Case& c);

/// The long family's row lengths: the reduced symbol's domain max and the value below it, and each
/// tile size above its typical_max with the value below it (a package's guard max comes as one),
/// longest first, within the domain and its multiple_of. Empty for an op without a reduced symbol
/// or whose reduced symbol never exceeds typical_max.
std::vector<int64_t> long_sizes(const SymbolDomain& domain, const std::vector<int64_t>& tile_sizes);

/// How many cases the long family holds for the op and kernel: every long size, with a large
/// mean, constant rows and normal values, in every supported dtype (0: the family does not
/// apply).
int64_t long_case_count(const OpSignature& op, const KernelTraits& traits);

/// The ragged sizes for a symbol: 0 (if allowed), 1, 2, small primes, 2^k +- 1, tile +- 1, max;
/// all within [domain.min, domain.max], sorted and unique.
std::vector<int64_t> ragged_sizes(const SymbolDomain& domain, const std::vector<int64_t>& tile_sizes);

}  // namespace kgate::props
