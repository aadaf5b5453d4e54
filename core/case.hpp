// A case: op + dtype + concrete shape + layout + value family + seed. Serializes to JSON and to a
// short id that `kgate replay` turns back into exactly the same case.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/dtype.hpp"

namespace kgate {

/// How the inputs are laid out in memory.
enum class Layout {
  contiguous,  ///< row-major, aligned
  strided,     ///< every other element of a wider buffer along the last dim (non-contiguous view)
  offset,      ///< contiguous, but starting one element into the storage (misaligns vector loads)
  padded,      ///< rows padded: the last dim is unit-stride, each row's stride exceeds its length
               ///< (a column slice x[:, :N] of a wider tensor); tensors of rank < 2 stay contiguous
  offset16,    ///< contiguous, starting 16 bytes into the storage: 16-byte aligned, not 256 (x[1:])
};

/// Elements of padding after each row in the padded layout (row stride = row length + this).
inline constexpr int64_t kPaddedLayoutElements = 3;

/// Which family the input values are drawn from.
enum class Values {
  normal,         ///< N(0, 1)
  uniform,        ///< U[-9, 9)
  extreme,        ///< magnitudes near the dtype's limit (op-specific scale)
  tiny,           ///< subnormal / near-zero magnitudes
  large_mean,     ///< a large mean with a tiny spread (cancellation)
  all_equal,      ///< every element equal
  clustered_max,  ///< many elements equal to the row maximum
  pm_pairs,       ///< +x / -x pairs
  special,        ///< +-0, +-Inf and NaN sprinkled into normal values
  captured,       ///< the tensors of a captured-inputs file (safetensors), not drawn
};

const char* layout_name(Layout layout);
Layout parse_layout(const std::string& name);
const char* values_name(Values values);
Values parse_values(const std::string& name);

struct Case {
  std::string op;
  DType dtype = DType::f32;
  std::vector<std::pair<std::string, int64_t>> dims;  ///< in the op's symbol order
  Layout layout = Layout::contiguous;
  Values values = Values::normal;
  uint64_t seed = 0;
  std::string family;  ///< generator family that produced it (random, ragged, ...); not in the id
  /// Values::captured: the file's name as the package or command line gives it (in the id, as
  /// "captured=NAME"), and where it lies (not in the id: replay resolves the name again).
  std::string captured;
  std::string captured_path;

  /// Value of a shape symbol; throws if the case has no such symbol.
  int64_t dim(const std::string& name) const;
  void set_dim(const std::string& name, int64_t value);
  int64_t numel_hint() const;

  /// "softmax:f32:B=4,N=257:contiguous:normal:00000000deadbeef" — everything needed to replay
  /// ("...:contiguous:captured=inputs/llama.safetensors:0000000000000001" for captured inputs).
  std::string id() const;
  /// Inverse of id(); throws a usage Error naming the part that is malformed.
  static Case from_id(const std::string& id);

  bool operator==(const Case& other) const;
};

void to_json(nlohmann::json& j, const Case& c);
void from_json(const nlohmann::json& j, Case& c);

}  // namespace kgate
