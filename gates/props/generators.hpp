// Case generators: every case is a pure function of (op signature, kernel traits, master seed,
// index). Families: random shapes, ragged shapes (0, 1, 2, primes, 2^k +- 1, tile sizes +- 1, very
// long rows), extreme-range values, special values (+-0, +-Inf, NaN), layouts (strided,
// misaligned), long rows (the reduced symbol at its domain's max and the guard's, constant and
// large-mean rows: errors that grow with the row length), and one huge case past 2^31 elements
// (32-bit index arithmetic) on the cuda backend.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/case.hpp"
#include "core/found_size.hpp"
#include "core/op_signature.hpp"

namespace kgate::props {

/// What the kernel under test accepts; cases outside it are not generated.
struct KernelTraits {
  std::vector<DType> dtypes;        ///< empty: every dtype of the op
  std::vector<int64_t> tile_sizes;  ///< declared: ragged cases reach t - 1, t + 1 and t first
  bool accepts_strided = false;
  bool accepts_unaligned = true;
  /// The huge family applies (a device runs the kernel; the cpu backend skips it).
  bool huge = false;
  /// Sizes found in a package's manifest or in the kernel's launches: reached after the declared.
  std::vector<FoundSize> found_sizes;
};

/// The declared tile sizes and the found ones, sorted and distinct: the sizes shrinking steps to
/// and the long family reaches above typical_max.
std::vector<int64_t> all_tile_sizes(const KernelTraits& traits);

/// One size of the ragged family on the edge symbol, and why it is there.
struct Edge {
  int64_t size = 0;
  /// declared, manifest, observed (a tile or bound +- 1 and the size itself), small (0, 1, 2,
  /// 3) or spread (2^k +- 1 and primes up to typical_max).
  std::string origin;
  std::string detail;  ///< "tile 256 - 1", "guard.shapes.N.max + 1", "2^12 + 1", ...
};

/// The symbol the ragged family puts its edges on: the op's reduced symbol, else the innermost
/// symbol of its first input ("" for an op without symbols).
std::string edge_symbol(const OpSignature& op);

/// The ragged family's sizes on the edge symbol, in the order its cases take them (case i takes
/// entry i, its dtype rotating): each declared tile t at t - 1, t + 1 (all tiles), then t; then
/// each found size likewise; then 0 (where the domain allows), 1, 2, 3; then 2^k +- 1, primes and
/// tile multiples up to typical_max (the long family reaches past it), spread: each next size the
/// farthest, in log scale, from those before it (the seed breaks near-ties). Within the domain and
/// its multiple_of
/// (a tile's neighbours are then t -+ multiple_of), distinct.
std::vector<Edge> ragged_edges(const SymbolDomain& domain, const KernelTraits& traits,
                               uint64_t seed);

/// The case whose launches show a kernel's tiles (props::infer_tiles): the edge symbol at a prime
/// near 16381 (within its domain, well above the usual tiles), every other symbol small (3 where
/// the domain allows), normal values, contiguous, the kernel's first dtype. nullopt when the op has
/// no edge symbol or no such shape is in its domain.
std::optional<Case> probe_case(const OpSignature& op, const KernelTraits& traits, uint64_t seed);

/// How many leading entries of ragged_edges are tile edges (declared, manifest, observed): the
/// ragged family's share of a budget grows to reach them (up to half of it).
int64_t tile_edge_count(const std::vector<Edge>& edges);

/// Which ragged edges a case list reached (any case whose edge symbol has the edge's size, in any
/// family) and which it left out.
struct EdgeCoverage {
  std::string symbol;  ///< the edge symbol ("" : the op has none; nothing below)
  struct Reached {
    Edge edge;
    std::vector<DType> dtypes;  ///< the dtypes of the cases that reached it
  };
  std::vector<Reached> tried;  ///< tile and small edges reached
  std::vector<Edge> left_out;  ///< tile and small edges no case reached (the budget ran out)
  int64_t spread_tried = 0;    ///< spread sizes reached, of
  int64_t spread_total = 0;
};
EdgeCoverage edge_coverage(const OpSignature& op, const KernelTraits& traits, uint64_t seed,
                           const std::vector<Case>& cases);

/// A tensor past this many elements wraps 32-bit index arithmetic: each huge case holds one.
inline constexpr int64_t kHugeElements = int64_t{1} << 31;

/// The generator families, in the order their GoogleTest suites run.
inline const std::vector<std::string>& all_families() {
  static const std::vector<std::string> families = {"random",  "ragged", "extreme",
                                                    "special", "layout", "long"};
  return families;
}

struct GeneratorOptions {
  uint64_t seed = 0;
  int64_t cases = 64;                       ///< total over all families and dtypes
  std::vector<std::string> families;        ///< empty: all that apply to the op and kernel
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
inline bool is_huge(const OpSignature& op, const Case& c) {
  return largest_tensor_numel(op, c) > kHugeElements;
}

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
std::vector<int64_t> ragged_sizes(const SymbolDomain& domain,
                                  const std::vector<int64_t>& tile_sizes);

}  // namespace kgate::props
