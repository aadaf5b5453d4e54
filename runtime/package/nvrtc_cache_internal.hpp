// What the parts of compile_package share, not part of kgate's API: the compile driver
// (nvrtc_cache.cpp), the content-addressed CUBIN store (nvrtc_cache_store.cpp) and the loader of a
// package's precompiled kernel files (precompiled_kernels.cpp).
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runtime/package/nvrtc_cache.hpp"
#include "runtime/package/nvrtc_worker.hpp"

namespace kgate::package::compile_internal {

/// Seconds from `t0` to now.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Everything NVRTC sees, gathered from the package before hashing and compiling.
struct Inputs : NvrtcRequest {
  std::vector<std::filesystem::path> system_include_dirs;
};

/// The cache key of a translation unit: SHA-256 over the cache format, NVRTC's version, the arch,
/// the options, the sources and headers, the name expressions and the toolkit's headers.
std::string cache_key(const Inputs& in, const std::string& arch);

/// Where one translation unit's entry lives in the cache, and the key that authenticates it; no
/// `mac_key` when the cache is off (CompileOptions::use_cache false, or nowhere to keep a key).
struct CacheSlot {
  std::filesystem::path cubin_path;
  std::filesystem::path meta_path;
  std::optional<std::string> mac_key;
};

/// The slot of the entry with key `key` under the options' cache directory, its directories made
/// and checked (Error(usage) for one that is unsafe or cannot be made); says once per process
/// when the cache is off for want of a key.
CacheSlot open_cache_slot(const CompileOptions& opt, const std::string& key);

/// Reads the slot's entry into `r` (CUBIN and lowered names); false when it is missing,
/// incomplete, corrupt, foreign or forged: then it is recompiled and replaced.
bool load_cache_entry(const CacheSlot& slot, const std::string& key, CompileResult& r);

/// Writes `r` (just compiled from `in`) to the slot, and sets r.cache_entry when it was written. A
/// cache that cannot be written costs the next run a compile, nothing more.
void store_cache_entry(const CacheSlot& slot, const PackageManifest& m, const CompileOptions& opt,
                       const Inputs& in, CompileResult& r);

/// Loads the precompiled kernel file the package ships for `opt.arch` (PackageManifest::cubins,
/// fatbin, ptx): true when one was loaded (or a problem found; `ok` says which), false when the
/// package has none for it and its sources are compiled.
bool load_precompiled(const PackageManifest& m, const CompileOptions& opt, CompileResult& r,
                      ManifestProblem& problem, bool& ok);

}  // namespace kgate::package::compile_internal
