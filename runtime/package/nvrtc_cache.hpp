// Compiling a package with NVRTC to a CUBIN, with an on-disk cache keyed by content: the SHA-256 of
// the sources, the headers of the include_dirs, the options, the architecture, the kernel name
// expressions and the NVRTC version. A second compile of an unchanged package reads the cache and
// does not call NVRTC. Needs the NVRTC library only: no GPU, no driver.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

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
  /// Directories kgate itself adds with -I (the CUDA toolkit's headers, for <cuda_fp16.h> and
  /// friends); never taken from a manifest. Defaults to the toolkit kgate was built with.
  std::vector<std::filesystem::path> system_include_dirs = default_system_include_dirs();

  /// The toolkit include directory kgate was built with (or $CUDA_PATH/include), when it exists.
  static std::vector<std::filesystem::path> default_system_include_dirs();
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
};

/// $KGATE_CACHE_DIR, else $XDG_CACHE_HOME/kgate, else $HOME/.cache/kgate, else a kgate folder in
/// the system's temporary directory. The NVRTC entries go below it in nvrtc/.
std::filesystem::path default_cache_dir();

/// Compiles the package's sources (one translation unit; several sources are #included in manifest
/// order) for `options.arch`, registering every launch's kernel name expression and returning the
/// lowered names. Headers come from the manifest's include_dirs, read by kgate and handed to NVRTC
/// in memory, so nothing outside the package is read. Throws Error(package) naming the manifest,
/// the sources and carrying NVRTC's full log when compilation fails; Error(usage) for a bad arch or
/// an unusable cache directory.
CompileResult compile_package(const PackageManifest& manifest, const CompileOptions& options = {});

/// Like compile_package, but a problem of the package (a bad source, a compile error with NVRTC's
/// log) is stored in `problem` and false returned, instead of thrown. Other errors still throw.
bool try_compile_package(const PackageManifest& manifest, const CompileOptions& options,
                         CompileResult& result, ManifestProblem& problem);

/// How many times this process has called nvrtcCompileProgram (tests: a cache hit adds none).
uint64_t nvrtc_compile_count();

/// "MAJOR.MINOR" of the NVRTC library in use.
std::string nvrtc_version();

}  // namespace kgate::package
