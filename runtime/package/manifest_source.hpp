// kgate.json as written, decoded once from the parsed document after the JSON Schema has checked
// it: every value the checks read, typed, with the path of its field. A value whose JSON type the
// schema refused is not decoded (the schema's problem names it), so the checks that read a
// ManifestSource never meet one: they check what a schema cannot say (names against the op, symbols
// of expressions, CUDA's limits, files) and build the PackageManifest.
//
// The document stage (manifest.cpp) reads and parses the file and runs the schema; decode_manifest
// (manifest_decode.cpp) is the only code that walks JSON; the checks (manifest_checks.cpp) are
// passes over this source, run in the order check_manifest lists them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/package/manifest.hpp"

namespace kgate::package::source {

/// One JSON scalar as the checks need it: its type, its value and how a message shows it.
struct Value {
  enum class Type { null, boolean, integer, number, string, array, object };
  Type type = Type::null;
  std::string field;  ///< where it is: "launches[0].grid[1]"
  std::string text;   ///< a string's value
  int64_t integer =
      0;  ///< an integer's value (an unsigned one above 2^63 - 1 wraps, as JSON readers do)
  bool is_unsigned = false;  ///< an integer written without a sign (may exceed 2^63 - 1)
  uint64_t unsigned_value = 0;
  double number = 0;  ///< any number, as a double
  bool boolean = false;
  std::string found;  ///< what was found, for messages ("the string \"x\"", "an array")
  std::string dump;   ///< the value as JSON

  bool is_string() const { return type == Type::string; }
  bool is_integer() const { return type == Type::integer; }
  bool is_number() const { return type == Type::integer || type == Type::number; }
  /// An unsigned integer above 2^63 - 1, which an int64 cannot hold.
  bool above_int64() const {
    return is_unsigned && unsigned_value > static_cast<uint64_t>(INT64_MAX);
  }
};

/// "sources", "include_dirs", "captured_inputs": the strings of the array, each once, in order.
struct PathList {
  std::string key;
  std::size_t count = 0;  ///< entries in the array (0: missing or not an array)
  std::vector<Value> paths;
};

struct AttributeSource {
  std::string name;  ///< an identifier
  Value value;       ///< a number
};

/// A "symbols" entry (its name an identifier) and its [TENSOR, DIM] binding, when that is an array
/// of a tensor name (an identifier) and an integer.
struct SymbolSource {
  std::string name;
  std::string field;
  struct Binding {
    Value tensor;
    Value dim;
  };
  std::optional<Binding> binding;
};

/// An entry of a list of integer expressions (grid, block, a workspace shape): a string or an
/// integer, else `found` says what it is.
using ExprSource = Value;
/// A list of expressions: nullopt when missing; empty when the key holds something else.
using ExprList = std::optional<std::vector<ExprSource>>;

struct WorkspaceSource {
  std::string field;
  std::optional<std::string> name;
  std::optional<Value> dtype;
  ExprList shape;
  std::optional<Value> zero;
  std::optional<Value> start;
};

/// "outputs": {"C": {"start": 0}}: entries whose start is a number, "inf" or "-inf".
struct OutputStartSource {
  std::string name;
  std::string field;
  double start = 0;
};

/// One kernel argument: an object with exactly one kind key.
struct ArgSource {
  std::string field;
  std::string kind;  ///< "tensor", "workspace", "shape", "attribute", "scalar" or "stride"
  Value value;       ///< the value of the kind key
  bool has_type = false;
  std::optional<ScalarType> type;  ///< "type", when it names a scalar type
  /// stride: [TENSOR, DIM] when it is an array of two whose second is an integer.
  std::optional<SymbolSource::Binding> stride;
};

/// A cubin entry: {"sm_90": "k.sm_90.cubin"}.
struct BinarySource {
  std::string arch;
  Value path;
};

struct WhenSource {
  std::optional<Value> if_expr;
  std::optional<std::vector<Layout>> layouts;
};

/// One launch, with the keys it takes from launch_defaults and one binding of its "for_each"
/// substituted: `field` says which ("launches[3]", "launches[3]{VPT=4}").
struct LaunchSource {
  std::string field;
  bool has_kernel = false;
  std::optional<Value> kernel;  ///< a string kernel name
  /// An object of name expressions per dtype (non-empty): its keys (strings, with the entry's
  /// field), each with its value.
  bool kernel_per_dtype = false;
  std::vector<std::string> kernel_keys;
  std::vector<std::pair<Value, Value>> kernel_for_dtype;
  ExprList grid;
  ExprList block;
  std::optional<ExprSource> shared_mem;
  std::optional<ExprSource> max_dynamic_shared_mem;
  std::optional<int> carveout;
  ExprList cluster;
  bool cooperative = false, pdl = false;  ///< "cooperative", "pdl" (booleans: the schema)
  bool has_args = false;
  std::vector<ArgSource> args;
  std::optional<WhenSource> when;
  std::optional<std::vector<Value>> nvrtc_options;
  std::vector<BinarySource> cubins;  ///< "cubin": this launch's own CUBINs
  ExprList assumes;                  ///< "assumes": its binary's specialization
};

struct ShapeRangeSource {
  std::string symbol;
  std::string field;
  bool is_object = false;
  /// Each bound when written and valid (an integer of at least 0, multiple_of at least 1).
  bool has_min = false, has_max = false;
  std::optional<int64_t> min, max, multiple_of;
};

struct VariantSource {
  std::string field;
  bool has_dims = false;  ///< "dims" is an object
  std::vector<std::string> dim_keys;
  struct Dim {
    std::string symbol;
    std::string field;
    std::optional<int64_t> value;  ///< an integer of at least 0
  };
  std::vector<Dim> dims;
  std::optional<Value> dtype;
  std::optional<int64_t> calls;  ///< an integer of at least 1
};

struct GuardSource {
  std::vector<Value> dtypes;  ///< the strings of guard.dtypes
  std::vector<int> ranks;     ///< 1 to 8
  std::vector<ShapeRangeSource> shapes;
  std::optional<std::vector<Layout>> layouts;
  bool has_variants = false;
  std::size_t variant_count = 0;  ///< entries of the array
  std::vector<VariantSource> variants;
  std::vector<Value> require;  ///< the strings of guard.require
  bool unmatched_fallback = false;
};

struct NvrtcOptionsForDtype {
  Value dtype;  ///< the key, a string, with the entry's field
  std::vector<Value> options;
};

struct ManifestSource {
  std::optional<std::string> format, name, version, description, op;
  std::optional<Value> op_file;
  std::vector<AttributeSource> attributes;
  PathList sources, include_dirs, captured_inputs;
  std::vector<BinarySource> cubins;
  std::optional<Value> fatbin, ptx;
  std::optional<Value> build_compiler;  ///< "build.compiler"
  std::vector<Value> nvrtc_options;
  std::vector<NvrtcOptionsForDtype> nvrtc_options_for_dtype;
  std::vector<SymbolSource> symbols;
  std::vector<WorkspaceSource> workspace;
  std::vector<OutputStartSource> outputs;
  std::vector<LaunchSource> launches;
  /// Some launch could not be read at all (no launches, a bad for_each): checks over every launch
  /// are skipped, since an output "never passed to a kernel" would be a wrong lead.
  bool launches_incomplete = false;
  /// Problems of the expansion that a schema cannot say (how many launches "for_each" makes), as
  /// (field, message): the launches' check reports them first.
  std::vector<std::pair<std::string, std::string>> expansion_problems;
  std::optional<GuardSource> guard;
};

/// Decodes a manifest document that is a JSON object (the caller parsed it and ran the schema).
/// Defined in manifest_decode.cpp, the one place that reads the JSON.
ManifestSource decode_manifest(const nlohmann::json& document);

/// A field's path: "launches[0]" + "grid" = "launches[0].grid", and its i-th entry "...grid[1]".
inline std::string sub(const std::string& field, const std::string& key) {
  return field.empty() ? key : field + "." + key;
}
inline std::string at(const std::string& field, std::size_t i) {
  return field + "[" + std::to_string(i) + "]";
}

/// Limits of the format the decoder and the checks share.
inline constexpr std::size_t kMaxRequire = 32;   ///< predicates of guard.require
inline constexpr std::size_t kMaxLaunches = 64;  ///< launches listed, before for_each
inline constexpr std::size_t kMaxExpandedLaunches =
    64;                                         ///< launches once every for_each is expanded
inline constexpr std::size_t kMaxOptions = 64;  ///< NVRTC options of one list
inline constexpr int kMaxRank = 8;

}  // namespace kgate::package::source
