// Running an exported kernel package. Host side, no GPU needed: the guard (is a case or a call
// inside it, and if not, why), the cases on both sides of every guard boundary and the captured
// variants, and the LaunchPlan of a call (shape symbols bound from the tensors, grid / block /
// shared memory evaluated, kernel parameters packed as cuLaunchKernel expects, workspace sizes).
// Device side: make_package_kernel() turns a compiled package into a KernelInfo whose launch()
// loads the CUBIN once per process and context, allocates the workspaces and launches every kernel
// of the sequence on the call's stream through the driver API (resolved at run time, never linked).
// Calls outside the guard are refused through KernelInfo::accepts: the runner falls back to the
// reference for them. Torch-free.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/case.hpp"
#include "core/guard_model.hpp"
#include "core/op_signature.hpp"
#include "runtime/kernel.hpp"
#include "runtime/package/manifest.hpp"
#include "runtime/package/nvrtc_cache.hpp"

namespace kgate::package {

// ---------------------------------------------------------------------------------------------
// The guard

/// The package layout of a case layout (the two enums name the same three layouts).
Layout to_package_layout(kgate::Layout layout);

/// The layout of a call: `strided` when any tensor is not row-major contiguous, else `offset`
/// when any tensor's base pointer is not 16-byte aligned, else `contiguous`.
Layout call_layout(const KernelCall& call);

/// The tensor symbols (tensor_symbol_names) of a call: each tensor's numel, strides and the
/// alignment of its first element.
SymbolValues call_tensor_values(const OpSignature& op, const KernelCall& call);

/// The tensor symbols a case's call will have: every input laid out per the case's layout as the
/// references lay inputs out (apply_layout; allocations 256-byte aligned), outputs contiguous and
/// 256-byte aligned (the runner's guard bands keep that), an output written in place as its input.
SymbolValues case_tensor_values(const OpSignature& op, const Case& c);

/// Why a call of `dtype` with the manifest's shape symbols at `dims`, tensors of rank `rank` and
/// layout `layout` is outside the manifest's guard; "" when it is inside. Checks, in this order,
/// guard.dtypes, guard.ranks, guard.layouts, guard.shapes in the order of "symbols", then each
/// guard.require predicate (with `tensors`, the call's tensor symbols). Messages:
///   "dtype f16 is not in guard.dtypes [f32]"
///   "rank 3 is not in guard.ranks [2]"
///   "layout strided is not in guard.layouts [contiguous]"
///   "N=300000 is above guard.shapes.N.max=262144"
///   "N=0 is below guard.shapes.N.min=1"
///   "N=257 is not a multiple of guard.shapes.N.multiple_of=8"
///   "symbol N has no value"  (a symbol missing from `dims`)
///   "guard.require[0] \"B * N % 8 == 0\" is 0 (B=3, N=7)"
std::string guard_violation(const PackageManifest& manifest, DType dtype,
                            const std::map<std::string, int64_t>& dims, Layout layout, int rank,
                            const SymbolValues& tensors = {});

/// The manifest's symbol values for a case: each symbol's tensor dimension, looked up through the
/// op's symbolic tensor shapes ("N": ["x", -1] and x:[B, N] give the case's N). Symbols whose
/// binding does not resolve are left out.
std::map<std::string, int64_t> case_symbol_values(const PackageManifest& manifest,
                                                  const OpSignature& op, const Case& c);

/// Every float-expression argument ({"scalar": "1 / sqrt(D)"}) with its value for a case, as the
/// launch passes it: "launches[0].args[4] \"1 / sqrt(D)\" = 0.125 as f32". Empty without any.
std::vector<std::string> case_float_scalars(const PackageManifest& manifest, const OpSignature& op,
                                            const Case& c);

/// A launch a case runs, evaluated from the case (not from a call): its field, kernel name
/// expression, grid, block, dynamic shared memory, the stated limit and cluster (all 0: none).
/// `error`: an expression that does not evaluate for the case.
struct CaseLaunch {
  std::string field;
  std::string kernel;
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1}, cluster{0, 0, 0};
  int64_t shared_mem = 0;
  std::optional<int64_t> max_dynamic_shared_mem;
  std::string error;
  bool pdl = false;  ///< a programmatic dependent launch (sm_90 and later)
  /// An assumption of the launch's binary the case breaks (launch_assumption_violation), or "".
  std::string violated;
};
/// The launches whose "when" holds for the case, under the device properties in effect
/// (device_props_in_effect(): the GPU's, or kgate validate's --device-props) where the manifest
/// reads them.
std::vector<CaseLaunch> case_launches(const PackageManifest& manifest, const OpSignature& op,
                                      const Case& c);
/// The first of launch `l`'s assumptions (Launch::assumes) that `values` (the call's symbols,
/// tensor symbols included) break: `launches[0].assumes[1] "N % 16 == 0" is 0 (N=17)`; "" if none.
std::string launch_assumption_violation(const Launch& l, const SymbolValues& values);
/// "launches[1] k<float, 128>: grid 64x1x1, block 256x1x1, 0 bytes of dynamic shared memory".
std::string describe(const CaseLaunch& launch);
struct DeviceProps;
/// Why a case inside the guard cannot run on a device of these properties: no launch matches it
/// (without guard.unmatched "fallback"), an expression does not evaluate, a block has more threads
/// or shared memory than the device gives, a cluster on a GPU before sm_90. Empty: it can.
std::vector<std::string> case_launch_problems(const PackageManifest& manifest,
                                              const OpSignature& op, const Case& c,
                                              const DeviceProps& props);

/// guard_violation for a case (its dtype, layout, symbol values and the rank of the tensors the
/// symbols bind to, from the op's signature); "" when the case is inside the guard.
std::string case_guard_violation(const PackageManifest& manifest, const OpSignature& op,
                                 const Case& c);
/// True when case_guard_violation is empty.
bool inside_guard(const PackageManifest& manifest, const OpSignature& op, const Case& c);

/// guard_violation for a call of real tensors (dtype of the first input, ranks and sizes of the
/// tensors the symbols bind to, call_layout), then the manifest's attributes against the call's:
///   "attribute dim=0 differs from the package's attributes.dim=-1"
///   "attribute dim is not set by the call (the package needs attributes.dim=-1)"
/// "" when the package may run the call. Throws Error(internal) when the call does not carry the
/// op's tensors.
std::string call_guard_violation(const PackageManifest& manifest, const OpSignature& op,
                                 const KernelCall& call);

// ---------------------------------------------------------------------------------------------
// Cases

/// The op symbol each manifest symbol stands for ("N": ["x", -1] with x:[B, N] -> "N"), through
/// the op's symbolic tensor shapes; symbols whose binding does not resolve are left out.
std::map<std::string, std::string> op_symbols_of(const PackageManifest& manifest,
                                                 const OpSignature& op);

/// The manifest's guard in the op's terms, for case generation (gates/props/guard_cases.hpp). It
/// refers to `manifest` and `op`, which must outlive it.
GuardModel guard_model_of(const PackageManifest& manifest, const OpSignature& op);

/// The largest guard boundary case a package kernel runs (elements of its largest tensor).
inline constexpr int64_t kMaxGuardCaseElements = int64_t{1} << 24;
/// Correctness cases on both sides of every guard boundary of the manifest
/// (props::guard_boundary_cases, gates/props/guard_cases.hpp, over guard_model_of: what each case
/// is and how it is drawn).
std::vector<Case> guard_boundary_cases(const PackageManifest& manifest, const OpSignature& op,
                                       uint64_t seed, int64_t max_elements = kMaxGuardCaseElements);

/// A case with how often production calls it (guard.variants' "calls").
struct VariantCase {
  Case kcase;
  int64_t calls = 0;
};

/// One case per guard.variants entry (family "variant", contiguous, normal values), op symbols the
/// manifest does not bind at their domain minimum (at least 1).
std::vector<VariantCase> variant_cases(const PackageManifest& manifest, const OpSignature& op,
                                       uint64_t seed);

/// The case moved inside the guard: each bound symbol clamped into its guard range (and rounded to
/// its multiple_of), layout contiguous; nullopt when its dtype is not in guard.dtypes or no value
/// fits. For timing shapes when a package lists no variants.
std::optional<Case> move_inside_guard(const PackageManifest& manifest, const OpSignature& op,
                                      const Case& c);

/// Tile sizes for the ragged case family (which puts t-1, t, t+1 on the op's reduced symbol): the
/// guard's min (when > 1), max and multiple_of (when > 1) of the symbol bound to the reduced one,
/// and the constants that symbol is compared with in the launches' "when.if" (where a package
/// switches kernels: "N <= 1024" gives 1024).
std::vector<int64_t> guard_tile_sizes(const PackageManifest& manifest, const OpSignature& op);

/// The sizes on the op's reduced symbol where the package's behaviour changes, each once with where
/// it was found, in this order: the constant divisors of the launches' grid expressions over the
/// symbol bound to it ("(N + 255) / 256", "ceil_div(N, 1024)": a grid that covers N in tiles of
/// that size), then guard_tile_sizes' (the launches' `when` conditions, the guard's bounds).
/// Ragged cases reach each at s - 1, s + 1 and s (origin "manifest").
std::vector<FoundSize> manifest_sizes(const PackageManifest& manifest, const OpSignature& op);

// ---------------------------------------------------------------------------------------------
// The launch plan

/// One kernel parameter, packed.
struct PlannedArg {
  std::string field;        ///< "launches[0].args[2]"
  std::string description;  ///< "tensor x", "workspace partial", "shape \"N\" as i64", ...
  KernelArg::Kind kind = KernelArg::Kind::tensor;
  ScalarType type = ScalarType::u64;  ///< the value's type (pointers: u64)
  std::size_t size = 0;               ///< bytes: 8 for a pointer, 4 or 8 for a value
  std::size_t alignment = 0;          ///< bytes (= size: the C ABI of these types)
  std::size_t offset = 0;             ///< where the value sits in PlannedLaunch::param_buffer()
  int workspace = -1;                 ///< workspace args: index into LaunchPlan::workspaces
};

/// One launch of the sequence, evaluated for a call.
struct PlannedLaunch {
  std::size_t index = 0;        ///< position in the manifest's launches, for_each expanded
  std::string field;            ///< "launches[3]", or "launches[3]{VPT=4}" (Launch::field)
  std::string name_expression;  ///< "softmax_rows<float>"
  std::string lowered_name;     ///< the mangled name in the CUBIN
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t shared_mem = 0;  ///< dynamic shared memory bytes
  /// The dynamic shared memory limit the kernel's host code sets ("max_dynamic_shared_mem"), the
  /// preferred carveout ("carveout") and the cluster dimensions ("cluster"; all 0: no cluster).
  std::optional<uint32_t> max_dynamic_shared_mem;
  std::optional<int> carveout;
  std::array<uint32_t, 3> cluster{0, 0, 0};
  bool cooperative = false;  ///< "cooperative"
  bool pdl = false;          ///< "pdl": programmatic dependent launch
  bool empty = false;        ///< a grid or block dimension is 0: nothing to launch
  std::vector<PlannedArg> args;

  /// The parameters laid out as the kernel's parameter struct would be (each value at an offset
  /// aligned to its size), 8-byte aligned: usable as CU_LAUNCH_PARAM_BUFFER_POINTER.
  const unsigned char* param_buffer() const;
  std::size_t param_buffer_size() const { return buffer_size_; }
  /// cuLaunchKernel's kernelParams: a pointer to each argument's value in the buffer. Valid while
  /// this PlannedLaunch lives and is not copied.
  std::vector<void*> kernel_params();
  /// Reads an argument's value back (tests, messages): the bytes at its offset as T.
  template <class T>
  T value(std::size_t arg) const;

 private:
  friend class LaunchPlanner;
  void append(PlannedArg arg, const void* value);
  void write(const PlannedArg& arg, const void* value);
  std::vector<uint64_t> storage_;  ///< the parameter buffer (uint64_t: 8-byte aligned)
  std::size_t buffer_size_ = 0;
  friend struct LaunchPlan;
};

/// A workspace tensor of a plan.
/// The bits of `value` as an element of `dtype` (f16 and bf16 rounded to nearest, ties to even):
/// how a start value is written.
uint64_t element_bits(DType dtype, double value);

struct PlannedWorkspace {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  bool zero = false;
  std::optional<double> start;  ///< what every element holds before the first launch (zero: 0)
};

/// Everything launch() needs, computed on the host without touching the GPU.
struct LaunchPlan {
  DType dtype = DType::f32;
  SymbolValues symbols;  ///< shape symbols bound from the tensors, and integer attributes
  std::vector<PlannedWorkspace> workspaces;
  std::vector<PlannedLaunch> launches;  ///< the launches that run for the call, in order
  std::vector<std::size_t> skipped;     ///< positions in "launches" whose "when" does not hold

  /// Writes `pointer` into every workspace argument that names workspace `index`.
  void bind_workspace(std::size_t index, void* pointer);
};

/// Plans a call: binds the symbols from the call's tensors, checks the call is inside the guard
/// (Error(usage) naming the violation otherwise), leaves out the launches whose "when" does not
/// hold for the call (its layout, call_layout, is not in when.layouts, or when.if evaluates to 0;
/// expressions also see the built-in dtype_size), and evaluates every other launch: the kernel's
/// lowered name for the call's dtype (from `lowered_names`, name expression -> mangled name), grid
/// and block (each >= 0, within CUDA's limits: grid x < 2^31, y and z <= 65535, block x and y <=
/// 1024, z <= 64, at most 1024 threads; a 0 grid or block dimension marks the launch empty),
/// shared_mem (0 to 2^32-1) and the arguments (tensor / workspace: a device pointer; shape /
/// attribute / scalar / stride: a value of the declared type, range-checked; an attribute the
/// manifest does not pin takes the call's value, else the op's default). Workspace arguments hold a
/// null pointer until bind_workspace. Every error is an Error(package) naming the package, the
/// launch, the field, the expression, the symbol values and the offending value.
LaunchPlan plan_launches(const PackageManifest& manifest, const OpSignature& op,
                         const std::map<std::string, std::string>& lowered_names,
                         const KernelCall& call);

// ---------------------------------------------------------------------------------------------
// The kernel

/// The KernelInfo of a compiled package: name = the package name, op = its op, backend cuda,
/// dtypes = guard.dtypes, found_sizes = manifest_sizes, accepts_strided / accepts_unaligned true
/// (calls outside guard.layouts fall back, so layout cases exercise both sides), source = the
/// package directory, package = true. accepts / rejection_reason: call_guard_violation. launch():
/// plans the call, loads the CUBIN once per process and CUDA context (cuModuleLoadData; the
/// CUfunction handles are cached; with cuFuncGetParamInfo, when the driver has it, the kernel's
/// parameter count and sizes are checked against "args" once per launch), sets
/// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES for more than 48 KiB of dynamic shared memory
/// (after checking the device's opt-in limit), allocates the workspaces (stream-ordered, zeroed
/// when "zero"), launches every non-empty launch in order on call.stream and frees the workspaces
/// after them on the stream. Every runtime and driver call is checked; errors name the package
/// and the launch. A call outside the guard throws Error(usage).
KernelInfo make_package_kernel(const PackageManifest& manifest, const CompileResult& compiled,
                               const OpSignature& op);

/// make_package_kernel for a package whose sources nvcc compiled into the program
/// (kgate_add_kernel PACKAGE): `functions` holds each of the manifest's name expressions with its
/// host stub (`(const void*)&ns::k<float>`); a launch runs the function cudaGetFuncBySymbol finds
/// for it, under the same plan, attributes and parameter checks. `package` false (it is replayed
/// with --kernel), no code digest. Error(package) when a name expression has no function, or when
/// the package needs several translation units (per-dtype or per-launch NVRTC options).
KernelInfo make_compiled_package_kernel(const PackageManifest& manifest, const OpSignature& op,
                                        const std::map<std::string, const void*>& functions);

// ---------------------------------------------------------------------------------------------

template <class T>
T PlannedLaunch::value(std::size_t arg) const {
  const PlannedArg& a = args.at(arg);
  T out{};
  static_assert(std::is_trivially_copyable_v<T>);
  const std::size_t n = sizeof(T) < a.size ? sizeof(T) : a.size;
  const unsigned char* p = param_buffer() + a.offset;
  unsigned char* q = reinterpret_cast<unsigned char*>(&out);
  for (std::size_t i = 0; i < n; ++i) q[i] = p[i];
  return out;
}

}  // namespace kgate::package
