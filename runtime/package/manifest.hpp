// The manifest of an exported kernel package, `kgate.json`, format "kgate-package/1": what the
// package implements (op, attributes), how it is built (sources, include_dirs, nvrtc_options), how
// it is launched (symbols bound to tensor dimensions, workspace tensors, a sequence of launches
// with grid / block / shared memory expressions and argument bindings) and the guard (dtypes,
// ranks, shape ranges, layouts, captured variants) outside which kgate falls back to the reference.
// Checking collects every problem, each naming the file, the field and what was expected; the JSON
// Schema runtime/package/kgate-package.schema.json describes the same format.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/expr.hpp"
#include "core/float_expr.hpp"
#include "core/op_signature.hpp"

namespace kgate::package {

/// The value of "format" this code reads.
inline constexpr const char* kPackageFormat = "kgate-package/1";
/// The manifest's file name inside a package directory.
inline constexpr const char* kManifestFileName = "kgate.json";
/// Largest accepted source or header file (bytes).
inline constexpr std::uintmax_t kMaxSourceBytes = 1u << 20;
/// Largest accepted precompiled kernel file (CUBIN, fatbin or PTX; bytes).
inline constexpr std::uintmax_t kMaxBinaryBytes = std::uintmax_t{256} << 20;
/// Largest accepted manifest (bytes).
inline constexpr std::uintmax_t kMaxManifestBytes = 1u << 20;
/// Most files kgate reads from a package's include_dirs, and their largest total size (bytes).
inline constexpr std::size_t kMaxHeaderFiles = 512;
inline constexpr std::uintmax_t kMaxHeaderBytes = 16u << 20;
/// Most entries of "sources" or "include_dirs".
inline constexpr std::size_t kMaxPathEntries = 256;
/// Largest workspace whose size is known from the manifest alone (bytes).
inline constexpr int64_t kMaxWorkspaceBytes = int64_t{1} << 48;
/// Most problems one check reports (one more line says how many were left out).
inline constexpr std::size_t kMaxProblems = 100;
/// Most captured variants a guard lists, and the largest call count of one: their product stays far
/// inside int64, so a workload's total call count cannot overflow.
inline constexpr std::size_t kMaxVariants = 10000;
inline constexpr int64_t kMaxVariantCalls = int64_t{1} << 40;

/// The symbols every expression may name besides the manifest's own: "dtype_size", the bytes of
/// one element of the call's dtype (4 for f32, 2 for f16 and bf16), for vector widths such as
/// "16 / dtype_size". Symbols and attributes may not take these names.
const std::vector<std::string>& builtin_symbol_names();
inline constexpr const char* kDtypeSizeSymbol = "dtype_size";

/// The symbols of a call's tensors that guard.require and a launch's when.if may name, for each
/// op tensor T: "numel_T" (its elements), "stride_T_D" for D from 0 to its rank - 1 (in
/// elements) and "align_T" (the largest power of two, at most kMaxAlignSymbol, that divides the
/// address of its first element, in bytes). In op tensor order, inputs first.
std::vector<std::string> tensor_symbol_names(const OpSignature& op);
inline constexpr int64_t kMaxAlignSymbol = 256;
/// True for a name of those forms for some tensor name ("numel_x", "stride_x_1", "align_x"):
/// manifest symbols and attributes may not take such names.
bool is_tensor_symbol_form(const std::string& name);

/// The C type of a scalar kernel argument.
enum class ScalarType { i32, i64, u32, u64, f32, f64 };
/// "i32", "i64", "u32", "u64", "f32", "f64", as written in manifests.
const char* scalar_type_name(ScalarType type);
/// Bytes of the parameter (4 or 8).
std::size_t scalar_type_size(ScalarType type);
/// True for i32, i64, u32, u64.
bool is_integer(ScalarType type);

/// The memory layouts a package accepts: dense row-major, any strides, non-zero storage offset
/// (a base pointer that need not be aligned).
enum class Layout { contiguous, strided, offset };
/// "contiguous", "strided" or "offset", as written in manifests.
const char* layout_name(Layout layout);

/// An op attribute the package was built for. A call whose attribute differs is outside the guard.
struct Attribute {
  std::string name;
  double value = 0;
  bool is_integer = false;  ///< written as a JSON integer: usable as an expression symbol
};

/// A shape symbol bound to one dimension of an op tensor: "N": ["x", -1] is x's last dimension.
struct SymbolBinding {
  std::string name;
  std::string tensor;
  int dim = 0;  ///< negative counts from the end, as in PyTorch
};

/// A scratch tensor kgate allocates for the launches (and fills first when `start` is set).
struct Workspace {
  std::string name;
  DType dtype = DType::f32;
  std::vector<Expr> shape;  ///< 1 to 8 dimension expressions
  bool zero = false;        ///< "zero": true (start is then 0)
  /// "start" (or 0 with "zero"): what every element holds before the first launch.
  std::optional<double> start;
};

/// One kernel parameter, in order.
struct KernelArg {
  enum class Kind {
    tensor,     ///< {"tensor": "x"}: the op tensor's data pointer
    workspace,  ///< {"workspace": "partial"}: a workspace tensor's data pointer
    shape,      ///< {"shape": "N * 2", "type": "i64"}: an expression value
    attribute,  ///< {"attribute": "dim", "type": "i32"}: an attribute of the call
    scalar,  ///< {"scalar": 1.0, "type": "f32"}: a constant, or {"scalar": "1 / sqrt(D)"}: a float
             ///< expression
    stride   ///< {"stride": ["x", 0], "type": "i64"}: the op tensor's stride, in elements
  };
  Kind kind = Kind::tensor;
  std::string name;                     ///< tensor, workspace or attribute name
  int dim = 0;                          ///< stride: the dimension (negative counts from the end)
  Expr value;                           ///< shape
  ScalarType type = ScalarType::i64;    ///< shape, attribute, scalar
  int64_t int_value = 0;                ///< integer scalar
  double float_value = 0;               ///< floating scalar
  std::optional<FloatExpr> float_expr;  ///< floating scalar computed per call (float_value unused)
};

/// When a launch of the sequence runs ("when"); both parts must hold. A launch without a
/// condition always runs. Conditions let one package describe a kernel that dispatches on the
/// shapes, the dtype or the layout of a call: "when": {"if": "N > 1024"}.
struct LaunchCondition {
  std::optional<Expr> if_expr;  ///< "if": runs only when the expression is non-zero
  std::vector<Layout> layouts;  ///< "layouts": runs only for calls of these layouts (empty: any)
};

/// One kernel launch of the package's sequence. In kgate.json a launch may take keys it omits from
/// "launch_defaults", and a "for_each" ({"VPT": [1, 2, 4]}, or [{"VPT": 1, "LO": 0}, ...]) makes
/// one launch per binding, with each "{NAME}" in its strings replaced by the value.
struct Launch {
  /// The kernel's C++ name expression for every dtype ("softmax_rows<float>", or an extern "C"
  /// name); empty when `kernel_for_dtype` is used instead.
  std::string kernel;
  /// Per-dtype name expressions: {"f32": "k<float>", "bf16": "k<__nv_bfloat16>"}.
  std::map<DType, std::string> kernel_for_dtype;
  std::vector<Expr> grid;   ///< 1 to 3 expressions (x, y, z); missing ones are 1
  std::vector<Expr> block;  ///< 1 to 3 expressions
  Expr shared_mem;          ///< dynamic shared memory bytes
  std::vector<KernelArg> args;
  LaunchCondition when;
  /// NVRTC options of this launch's compile only ("-DVPT=4"): launches (and dtypes) with different
  /// options are compiled apart (compile_units).
  std::vector<std::string> nvrtc_options;
  /// Attributes the kernel's own host code sets: its dynamic shared memory limit
  /// (cudaFuncAttributeMaxDynamicSharedMemorySize; unset: kgate raises the limit to shared_mem by
  /// itself where that is above 48 KiB, and says so), its preferred shared-memory carveout
  /// (percent, -1 the driver's default) and thread-block cluster dimensions (empty: no cluster).
  std::optional<Expr> max_dynamic_shared_mem;
  std::optional<int> carveout;
  std::vector<Expr> cluster;
  /// Launched cooperatively (CU_LAUNCH_ATTRIBUTE_COOPERATIVE: the kernel syncs its whole grid, so
  /// every block must be resident at once) and with programmatic dependent launch
  /// (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, sm_90 and later), as the kernel's
  /// host code launches it (a Triton kernel's launch_cooperative_grid and launch_pdl).
  bool cooperative = false;
  bool pdl = false;
  /// This launch's own precompiled CUBINs (architecture -> package-relative path), loaded as a
  /// module of its own: a kernel compiled once per specialization (a Triton kernel). Empty: the
  /// package's cubin, fatbin, PTX or sources.
  std::map<std::string, std::string> cubins;
  /// "assumes": what its binary was compiled to assume of every call that reaches it (a Triton
  /// specialization: "N % 16 == 0", "align_x >= 16"), over the symbols guard.require reads. A call
  /// that reaches the launch outside them is a package defect (launch_assumption_violation).
  std::vector<Expr> assumes;
  /// Where it is written, for messages: "launches[3]", or "launches[3]{VPT=4}" for one binding of
  /// a "for_each".
  std::string field;

  /// The name expression launched for `dtype` (empty when none).
  std::string kernel_name(DType dtype) const;
};

/// A shape range of the guard: min <= value <= max and value % multiple_of == 0.
struct ShapeRange {
  int64_t min = 0;
  int64_t max = 0;
  int64_t multiple_of = 1;
};

/// A call the package was optimized for (captured in production), with how often it was seen.
struct Variant {
  std::map<std::string, int64_t> dims;
  DType dtype = DType::f32;
  int64_t calls = 0;
};

/// Where the package may be used; outside it kgate dispatches to the reference.
struct Guard {
  std::vector<DType> dtypes;
  std::vector<int> ranks;                    ///< empty: any rank
  std::map<std::string, ShapeRange> shapes;  ///< per shape symbol
  std::vector<Layout> layouts{Layout::contiguous};
  std::vector<Variant> variants;
  /// "require": predicates every call inside the guard satisfies (each evaluates non-zero), over
  /// the shape symbols, integer attributes, dtype_size and the call's tensor symbols
  /// (tensor_symbol_names): "B * N % 8 == 0", "stride_x_1 == 1", "align_x >= 16".
  std::vector<Expr> require;
  /// "unmatched": "fallback": a call inside the guard that no launch's "when" matches runs the
  /// reference (it is outside the guard). Default ("error"): such a call is a failure that names
  /// the conditions, since the kernel would leave the outputs unwritten.
  bool unmatched_fallback = false;
};

/// Whether `launch` runs for a call with these symbol values (dtype_size and integer attributes
/// included) and layout: its "when" layouts list the layout and its "if" is non-zero. Throws
/// Error when the "if" cannot be evaluated.
bool launch_runs(const Launch& launch, const SymbolValues& values, Layout layout);

struct PackageManifest;
/// Whether a launch or workspace expression of `manifest` names a device property.
bool manifest_reads_device(const PackageManifest& manifest);

/// A parsed and checked kgate.json.
struct PackageManifest {
  std::filesystem::path dir;            ///< the package directory (canonical)
  std::filesystem::path manifest_path;  ///< dir / "kgate.json", as given by the caller
  std::string format;
  std::string name;
  std::string version;
  std::string op;
  std::string
      op_file;  ///< the op file (kgate-op/1) the package carries for an op not built in ("" : none)
  std::string description;
  std::vector<Attribute> attributes;
  std::vector<std::string>
      sources;  ///< package-relative paths, as written (may be empty with binaries)
  /// Precompiled kernels, package-relative: a CUBIN per architecture ("cubin": {"sm_90":
  /// "k.cubin"}), a fatbin and a PTX file. For a device of architecture A, kgate loads cubin[A],
  /// else the fatbin, else the PTX (JIT-compiled by the driver), else compiles the sources. Kernel
  /// names are then C++ names or the binary's symbols (kernel_names.hpp).
  std::map<std::string, std::string> cubins;
  std::string fatbin;
  std::string ptx;
  /// "build": {"compiler": "nvcc", ...}: the sources are compiled by kgate pack with nvcc into
  /// `fatbin` (nvcc_build.hpp), never at check time; "" when the package has no "build".
  std::string build_compiler;
  std::vector<std::string> include_dirs;  ///< package-relative paths, as written
  /// Captured-inputs files (safetensors), package-relative: fixed correctness cases.
  std::vector<std::string> captured_inputs;
  std::vector<std::string> nvrtc_options;
  /// Options of one dtype's compile only ("nvrtc_options_for_dtype": {"bf16": ["-DENABLE_BF16"]}).
  std::map<DType, std::vector<std::string>> nvrtc_options_for_dtype;
  std::vector<SymbolBinding> symbols;
  std::vector<Workspace> workspace;
  /// "outputs": {"C": {"start": 0}}: outputs the kernel reads before it writes them, and the value
  /// each holds before every launch (KernelInfo::output_start).
  std::map<std::string, double> output_start;
  std::vector<Launch> launches;
  Guard guard;
  /// Some launch or workspace expression reads a device property (device_sms, ...;
  /// device_props.hpp).
  bool reads_device = false;

  /// Every distinct kernel name expression of the launches (every dtype's), sorted.
  std::vector<std::string> name_expressions() const;
  /// The same of the launches at these indices only (a module of their own).
  std::vector<std::string> name_expressions(const std::vector<std::size_t>& launches) const;
  /// The declared attribute of that name, or nullptr.
  const Attribute* attribute(const std::string& attribute_name) const;
};

/// One translation unit of a package: the options it adds to "nvrtc_options" (its dtype's
/// nvrtc_options_for_dtype, then its launches' own), the kernel name expressions it instantiates,
/// and the (dtype, launch index) pairs whose kernels come from it.
struct CompileUnit {
  std::vector<std::string> options;
  std::vector<std::string> name_expressions;
  std::vector<std::pair<DType, std::size_t>> launches;
};

/// The package's translation units: one (without added options, every name expression) unless some
/// dtype or launch has options of its own; then one per distinct option set, in order of first use.
std::vector<CompileUnit> compile_units(const PackageManifest& manifest);

/// One problem found in a package: `<file>: <field>: <message>`.
struct ManifestProblem {
  std::string file;     ///< the manifest (or source) path
  std::string field;    ///< JSON-pointer-like path: "launches[0].grid[1]", "guard.shapes.N.min"
  std::string message;  ///< what was expected and what was found
};

/// What check_manifest can verify beyond the manifest itself.
struct ManifestCheckOptions {
  /// Looks an op up in the catalogue (nullptr: unknown op). When unset, the op's name, tensors and
  /// attributes are only checked for syntax.
  std::function<const OpSignature*(const std::string&)> find_op;
  /// Loads an op file the manifest names ("op_file") into the catalogue before the op is looked
  /// up; throws Error on an invalid op file. When unset, "op_file" is only checked as a path.
  std::function<void(const std::string&)> load_op_file;
  /// Names of the known ops, listed in the message for an unknown op.
  std::vector<std::string> known_ops;
  /// The manifest's bytes, checked instead of package_dir/kgate.json, with the files it names left
  /// unopened: paths are taken as written (include_dirs may reach outside the package), the op
  /// file is not loaded and captured inputs are not read. For a package compiled into the build by
  /// nvcc (kgate_add_kernel PACKAGE), which carries its manifest's bytes but none of its files.
  std::optional<std::string> manifest_text;
};

/// Reads and checks `package_dir/kgate.json` and the files it names; returns every problem found
/// (empty: the package is well formed). When `out` is given it receives the manifest as far as it
/// could be read. Never throws for a bad package.
std::vector<ManifestProblem> check_manifest(const std::filesystem::path& package_dir,
                                            const ManifestCheckOptions& options = {},
                                            PackageManifest* out = nullptr);

/// Reads and checks a package; throws Error(package) listing every problem, one per line.
PackageManifest load_manifest(const std::filesystem::path& package_dir,
                              const ManifestCheckOptions& options = {});

/// "<file>: <field>: <message>".
std::string format_problem(const ManifestProblem& problem);
/// One problem per line, each ending in '\n'.
std::string format_problems(const std::vector<ManifestProblem>& problems);

/// Why an NVRTC option from a manifest is refused (allow-list: -std=c++11|14|17|20,
/// --use_fast_math, -DNAME[=VALUE], -lineinfo, --fmad/--ftz/--prec-div/--prec-sqrt=true|false,
/// -maxrregcount=N,
/// --extra-device-vectorization, -default-device); empty when it is allowed.
std::string nvrtc_option_problem(const std::string& option);

/// Resolves `relative` (as written in the manifest) inside the package directory `dir`; throws
/// Error(package) when it is absolute, contains "..", does not exist or escapes `dir` through a
/// symbolic link. Returns the canonical path.
std::filesystem::path resolve_in_package(const std::filesystem::path& dir,
                                         const std::string& relative);

}  // namespace kgate::package
