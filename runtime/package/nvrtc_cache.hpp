// Compiling a package with NVRTC to a CUBIN, with an on-disk cache keyed by content: the SHA-256 of
// the sources, the headers of the include_dirs, the options, the architecture, the kernel name
// expressions and the NVRTC version. A second compile of an unchanged package reads the cache and
// does not call NVRTC. Needs the NVRTC library only: no GPU, no driver.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/package/compile_sandbox.hpp"
#include "runtime/package/kernel_binary.hpp"
#include "runtime/package/manifest.hpp"

namespace kgate::package {

/// How to compile a package.
struct CompileOptions {
  /// Target architecture, "sm_XY" (a CUBIN is produced, so virtual "compute_XY" is refused).
  std::string arch = "sm_90";
  /// Cache directory; empty: default_cache_dir().
  std::filesystem::path cache_dir;
  /// Read and write the cache (false: always compile, write nothing).
  bool use_cache = true;
  /// The file holding the key that authenticates cache entries; empty: default_cache_key_file().
  /// $KGATE_CACHE_KEY, when set, is the key itself and wins.
  std::filesystem::path cache_key_file;
  /// Directories kgate itself adds with -I (the CUDA toolkit's headers, for <cuda_fp16.h> and
  /// friends); never taken from a manifest. Defaults to the toolkit kgate was built with.
  /// They are also the only directories a compile can read (compile_sandbox.hpp).
  std::vector<std::filesystem::path> system_include_dirs = default_system_include_dirs();
  /// Refuse to compile when no sandbox can be entered (default: $KGATE_REQUIRE_SANDBOX is 1).
  bool require_sandbox = require_sandbox_from_environment();
  /// A compile that takes longer is stopped and reported (an #include of a FIFO, a macro bomb);
  /// default $KGATE_COMPILE_TIMEOUT, else 300.
  double compile_timeout_seconds = compile_timeout_from_environment();
  /// false: compile without entering a sandbox (for tests of what --require-sandbox does).
  bool sandbox = true;
  /// Resident-memory limit of the compile process (it is stopped past it).
  uint64_t compile_memory_bytes = 8ULL << 30;

  /// The toolkit include directory kgate was built with (or $CUDA_PATH/include), when it exists,
  /// and its cccl/ directory (cuda/std, CUB, Thrust and cooperative_groups' dependencies since
  /// CUDA 13), when present.
  static std::vector<std::filesystem::path> default_system_include_dirs();
  /// True when $KGATE_REQUIRE_SANDBOX is set to anything but "" or "0".
  static bool require_sandbox_from_environment();
  /// $KGATE_COMPILE_TIMEOUT when it is a positive number of seconds, else 300.
  static double compile_timeout_from_environment();
};

/// A compiled package.
struct CompileResult {
  std::string cubin;                                 ///< the CUBIN image (binary)
  std::map<std::string, std::string> lowered_names;  ///< name expression -> mangled symbol
  std::string key;                                   ///< cache key (SHA-256, hex)
  std::filesystem::path cache_entry;                 ///< CUBIN path in the cache (empty: none)
  bool cache_hit = false;
  double compile_seconds = 0;        ///< time spent in NVRTC (0 on a cache hit)
  double total_seconds = 0;          ///< hashing + cache look-up + compile + cache write
  std::string log;                   ///< NVRTC's log (warnings), empty on a cache hit
  std::vector<std::string> options;  ///< the options NVRTC received (or would have)
  /// How the compile was confined (meaningless on a cache hit), and why not better.
  SandboxKind sandbox = SandboxKind::none;
  std::string sandbox_detail;
  /// Each kernel's parameters (by lowered name), read from the CUBIN (or PTX) without a GPU; empty
  /// where the file could not tell. Checked against each launch's "args", and on a GPU against
  /// cuFuncGetParamInfo.
  std::map<std::string, std::vector<KernelParam>> params;
  /// Set when a precompiled kernel file was loaded instead of compiling: "cubin", "fatbin" or "ptx"
  /// (`cubin` then holds that file's bytes, a PTX text NUL-terminated), and its package path.
  std::string precompiled;
  std::string precompiled_path;
  /// A package of several translation units (compile_units: per-dtype or per-launch options): each
  /// unit's result, in compile_units order; the fields above then hold the first unit's CUBIN and
  /// key, every unit's lowered names, and the sums of the times. Empty for a package of one unit.
  std::vector<CompileResult> units;
  /// With units: the unit whose CUBIN holds the kernel of (dtype, launch index).
  std::map<std::pair<DType, std::size_t>, std::size_t> unit_of;
};

/// The compile result that holds launch `launch`'s kernel for `dtype`: its unit (CompileResult::
/// unit_of), or `r` itself for a package of one unit.
const CompileResult& compile_unit_for(const CompileResult& r, DType dtype, std::size_t launch);

/// $KGATE_CACHE_DIR, else $XDG_CACHE_HOME/kgate, else $HOME/.cache/kgate, else kgate-cache-<uid> in
/// the system's temporary directory (never one shared by users). The NVRTC entries go below it in
/// nvrtc/. A cache directory that is writable by everyone or owned by another user is refused.
std::filesystem::path default_cache_dir();

/// Compiles the package's sources (one translation unit; several sources are #included in manifest
/// order) for `options.arch`, registering every launch's kernel name expression and returning the
/// lowered names. Headers come from the manifest's include_dirs, read by kgate and handed to NVRTC
/// in memory, so nothing outside the package is read. Throws Error(package) naming the manifest,
/// the sources and carrying NVRTC's full log when compilation fails; a package that ships a
/// precompiled kernel file for the architecture (PackageManifest::cubins, fatbin, ptx) is loaded
/// from it instead, its kernel names checked against the file's symbols; Error(usage) for a bad
/// arch or an unusable cache directory.
CompileResult compile_package(const PackageManifest& manifest, const CompileOptions& options = {});

/// Like compile_package, but a problem of the package (a bad source, a compile error with NVRTC's
/// log) is stored in `problem` and false returned, instead of thrown. Other errors still throw.
bool try_compile_package(const PackageManifest& manifest, const CompileOptions& options,
                         CompileResult& result, ManifestProblem& problem);

/// $KGATE_CACHE_KEY_FILE, else $XDG_CONFIG_HOME/kgate/cache.key, else
/// $HOME/.config/kgate/cache.key; empty when none of them is set.
std::filesystem::path default_cache_key_file();

/// The key that authenticates cache entries (an HMAC of each entry's key, CUBIN digest and lowered
/// names): $KGATE_CACHE_KEY (a CI secret, so that caches restored across jobs are trusted), else
/// the content of the key file, made with 32 random bytes (mode 0600) on first use. A cache
/// restored without its key is recompiled, never trusted. nullopt when there is nowhere to keep a
/// key (the cache is then off). Throws Error(usage) for a key file that others can read or that
/// lies inside `cache_dir`.
std::optional<std::string> cache_mac_key(const std::filesystem::path& cache_dir,
                                         const std::filesystem::path& key_file);

/// The cache key covers the toolkit's headers (names, sizes, modification times), read once per
/// process; tests call this to have them read again.
void forget_toolkit_fingerprints();

/// How many times this process has called nvrtcCompileProgram (tests: a cache hit adds none).
uint64_t nvrtc_compile_count();

/// "MAJOR.MINOR" of the NVRTC library in use.
std::string nvrtc_version();

}  // namespace kgate::package
