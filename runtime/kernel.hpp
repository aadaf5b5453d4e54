// The kernel registry: how a kernel under test declares itself to kgate. Torch-free, so kernel
// sources (.cu) stay cheap to compile.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.hpp"
#include "core/found_size.hpp"
#include "core/tensor_view.hpp"

/// The layout of what a kernel's module hands kgate (KernelInfo, KernelCall, TensorView). A base
/// build's module (kgate check --baseline-build) records it with its kgate version
/// ("0.1.0+kernel-abi.2") and is refused, before it is loaded, by a kgate of another: its
/// registrations would be read with the wrong layout. Raised whenever those structs change.
#define KGATE_KERNEL_ABI 3

namespace kgate {

struct Case;

enum class Backend { cuda, cpu };
const char* backend_name(Backend backend);
Backend parse_backend(const std::string& name);

/// Everything a launch needs: the op's tensors in signature order, attributes, and the stream.
struct KernelCall {
  std::vector<TensorView> inputs;
  std::vector<TensorView> outputs;
  std::map<std::string, double> attributes;
  void* stream = nullptr;  ///< cudaStream_t for cuda kernels; unused on cpu
};

struct KernelInfo {
  std::string name;
  std::string op;
  /// The op file that defines `op` when it is not built in (an absolute path; loaded into the
  /// catalogue on first use). Empty for built-in ops, and for ops given with --ops.
  std::string op_file;
  Backend backend = Backend::cuda;
  std::vector<DType> dtypes;  ///< dtypes it supports (cases of other dtypes are not generated)
  /// Declared tile sizes (kgate_add_kernel's TILE_SIZES): ragged cases reach t - 1, t + 1 and t of
  /// each on the op's reduced symbol before any other size.
  std::vector<int64_t> tile_sizes;
  bool accepts_strided = false;   ///< takes non-contiguous views (else only contiguous inputs)
  bool accepts_unaligned = true;  ///< takes base pointers that are not 16-byte aligned
  std::string source;             ///< where it comes from (file or package)
  bool timed = true;              ///< false: a correctness twin (a simple reference kernel kept to
                      ///< anchor the mutant suite), not a deployment candidate: not timed
  bool mutant = false;         ///< a deliberately broken kernel (tests/mutants): must be rejected;
                               ///< left out of `kgate check` unless named with --kernel
  std::string expected_catch;  ///< for mutants: the case family meant to catch it
  /// A correct kernel of a control corpus (tests/controls, the gaming corpus): registered beside
  /// the mutants (`mutant` is true, so `kgate check` leaves it out unless named) but it must pass.
  bool control = false;
  std::function<void(const KernelCall&)> launch;

  /// Which calls the kernel takes (nullptr: every call). A call it does not accept is outside the
  /// kernel's guard (e.g. an exported package's guard.shapes / dtypes / layouts): the runner does
  /// not call `launch` for it but runs the op's eager reference into the outputs instead (the
  /// "fallback", as deployed code would), marks the case result `fallback`, and skips timing it.
  /// launch() may throw for such a call.
  std::function<bool(const KernelCall&)> accepts;
  /// Optional: why `accepts` refused a call, in words (e.g. "N=300000 is above
  /// guard.shapes.N.max=262144"), for reports. nullptr: no reason given.
  std::function<std::string(const KernelCall&)> rejection_reason;
  /// An exported kernel package (runtime/package): `source` is its directory, and a case is
  /// replayed with `kgate replay --package DIR` instead of `--kernel NAME`.
  bool package = false;
  /// A digest of the code the kernel runs, where kgate knows it (packages: every CUBIN and the
  /// manifest but its name, version and description); "" elsewhere. Two kernels with the same
  /// non-empty digest run the same code: their speed comparison is UNCHANGED and not timed.
  std::string code_digest;
  /// Outputs the kernel reads before it writes them, with the value each must hold before every
  /// launch (0, -inf, ...): a BLAS-style C = alpha*A@B + beta*C reads C even when beta is 0, an
  /// attention kernel accumulates into O. Such an output holds its start value, not the NaN
  /// poison, before every checked and timed launch (the refill between timed launches is not
  /// timed); an element still holding it where the reference differs beyond the tolerance counts
  /// as unwritten. Keyed by the op's output name; outputs written in place cannot have one.
  std::map<std::string, double> output_start;
  /// Optional (packages): the launches a case runs, in words ("launches[1] k<float, 128>: grid
  /// 64x1x1, block 256x1x1, 0 bytes of shared memory"), under the device's properties, and the
  /// properties themselves as JSON: a case id names a case, and the device picks the launch.
  std::function<std::vector<std::string>(const Case&)> case_launches;
  std::function<std::string()> device_props;
  /// Optional (packages): every launch of the manifest, as case_launches begins its lines
  /// ("launches[0]"): one that no correctness case runs is named in the report.
  std::vector<std::string> launch_fields;
  /// Optional (a kernel compiled from a package, kgate_add_kernel PACKAGE): correctness cases on
  /// both sides of every boundary of its guard, run after the generated ones, as `kgate check
  /// --package` runs them for a package. Deterministic in the seed.
  std::function<std::vector<Case>(uint64_t seed)> guard_cases;
  /// Optional (packages): what kgate did for the kernel that its own host code must also do (a
  /// dynamic shared memory limit raised past 48 KiB), in words; the report's warnings.
  std::function<std::vector<std::string>()> notes;
  /// Optional: fills in the rest of this info once, before the kernel is first listed or found
  /// (registered_kernels, find_kernel, end_module_capture), when kgate's op catalogue can be read:
  /// a kernel compiled from a package (kgate_add_kernel PACKAGE) reads its manifest there. Throws
  /// an Error naming the kernel when it cannot; the kernel then stays incomplete and every listing
  /// throws it again.
  std::function<void(KernelInfo&)> complete;
  /// Sizes kgate found where the kernel's behaviour changes (a package's guard bounds, `when`
  /// conditions and grid divisors), with where each came from: ragged cases reach them after the
  /// declared tiles. (Sizes observed in launch records are found when the kernel is checked.)
  std::vector<FoundSize> found_sizes;
};

/// The UNCHANGED rule's first half: `a` and `b` run the same code (equal, non-empty code digests).
/// On the GPU the pipeline also compares their launches before calling a pair UNCHANGED.
inline bool same_code(const KernelInfo& a, const KernelInfo& b) {
  return !a.code_digest.empty() && a.code_digest == b.code_digest;
}

/// Adds a kernel; throws an internal Error on a duplicate name. Between begin_module_capture()
/// and end_module_capture() the kernel goes to the capture instead (a base build's module being
/// loaded: its kernels carry the head's names, and must not replace or meet the head's).
bool register_kernel(KernelInfo info);
/// Starts capturing registrations (and op files embedded by them, which are dropped: both sides of
/// a pairing are judged under the head's op definitions).
void begin_module_capture();
/// Ends the capture and returns the kernels registered since begin_module_capture().
std::vector<KernelInfo> end_module_capture();
/// Every registered kernel, each completed (KernelInfo::complete) on the first call.
const std::vector<KernelInfo>& registered_kernels();
/// Finds a kernel by name; throws a usage Error listing the known names.
const KernelInfo& find_kernel(const std::string& name);

}  // namespace kgate

namespace kgate {
/// The KernelInfo of a CPU kernel: its name, op, dtypes, source file and launcher; it takes strided
/// and unaligned views (a loop reads any strides). Set the rest (tile_sizes, timed) on the result.
/// CUDA kernels start from cuda_kernel() (runtime/dispatch.hpp).
inline KernelInfo cpu_kernel(std::string name, std::string op, std::vector<DType> dtypes,
                             std::string source, std::function<void(const KernelCall&)> launch) {
  KernelInfo k;
  k.name = std::move(name);
  k.op = std::move(op);
  k.backend = Backend::cpu;
  k.dtypes = std::move(dtypes);
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.source = std::move(source);
  k.launch = std::move(launch);
  return k;
}

/// `info` with `op_file` set from the translation unit's KGATE_OP_FILE (kgate_add_kernel's OP_FILE)
/// unless it names one itself.
inline KernelInfo with_op_file(KernelInfo info, const char* op_file) {
  if (info.op_file.empty() && op_file && *op_file) info.op_file = op_file;
  return info;
}

/// `info` marked as kgate_add_kernel's MUTANT or CONTROL says (KGATE_KERNEL_MUTANT /
/// KGATE_KERNEL_CONTROL of the translation unit), whatever the source sets: a project that builds
/// one source twice, the second time broken, need not mark it in code.
inline KernelInfo with_role(KernelInfo info, bool mutant, bool control) {
  if (mutant || control) info.mutant = true;
  if (control) info.control = true;
  return info;
}
}  // namespace kgate

#ifdef KGATE_OP_FILE
#define KGATE_KERNEL_OP_FILE KGATE_OP_FILE
#else
#define KGATE_KERNEL_OP_FILE ""
#endif

#ifdef KGATE_KERNEL_MUTANT
#define KGATE_KERNEL_IS_MUTANT true
#else
#define KGATE_KERNEL_IS_MUTANT false
#endif
#ifdef KGATE_KERNEL_CONTROL
#define KGATE_KERNEL_IS_CONTROL true
#else
#define KGATE_KERNEL_IS_CONTROL false
#endif

#define KGATE_CONCAT_INNER(a, b) a##b
#define KGATE_CONCAT(a, b) KGATE_CONCAT_INNER(a, b)
/// Registers a kernel at static-initialization time:
///   KGATE_REGISTER_KERNEL(([] { kgate::KernelInfo k; ...; return k; })());
#define KGATE_REGISTER_KERNEL(info_expr)                                                  \
  static const bool KGATE_CONCAT(kgate_registered_, __LINE__) = ::kgate::register_kernel( \
      ::kgate::with_role(::kgate::with_op_file(info_expr, KGATE_KERNEL_OP_FILE),          \
                         KGATE_KERNEL_IS_MUTANT, KGATE_KERNEL_IS_CONTROL))
