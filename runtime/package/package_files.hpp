// Files of a package: every path a manifest names is resolved here, and only here, so that the
// rules hold everywhere: relative, no "..", no symbolic link out of the package, size-limited.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kgate::package {

/// What a manifest path must name.
enum class PathKind {
  source,     ///< a regular file of at most kMaxSourceBytes
  binary,     ///< a regular file of at most kMaxBinaryBytes (a precompiled CUBIN, fatbin or PTX)
  data,       ///< a regular file of at most kMaxBinaryBytes (captured inputs: safetensors)
  directory,  ///< a directory
  any         ///< anything that exists
};

/// A file handed to NVRTC: the name it is #include'd by and where it lives (canonical).
struct PackageFile {
  std::string name;
  std::filesystem::path path;
};

/// Checks `relative` (as written in the manifest) against the canonical package directory `root`.
/// Returns an empty string and sets `*resolved` to the canonical path when it is acceptable;
/// otherwise the problem, in words (without file or field).
std::string package_path_problem(const std::filesystem::path& root, const std::string& relative,
                                 PathKind kind, std::filesystem::path* resolved);

/// True when the canonical path `p` lies inside the canonical directory `root`.
bool is_inside(const std::filesystem::path& root, const std::filesystem::path& p);

/// Whether one of the path's components is ".." (a name such as "v1..2" is not).
bool climbs(const std::filesystem::path& p);

/// Lists the header files (.h .hh .hpp .hxx .cuh .inl .inc .ipp .tcc) under the package-relative
/// include directory `include_dir`, named relative to it, appending to `out`. `files` and `bytes`
/// accumulate across include dirs against kMaxHeaderFiles / kMaxHeaderBytes. Symbolic links to
/// directories are not followed. Returns the first problem, or an empty string.
std::string scan_include_dir(const std::filesystem::path& root, const std::string& include_dir,
                             std::vector<PackageFile>& out, std::size_t& files,
                             std::uintmax_t& bytes);

/// Reads a whole file; throws Error(package) naming it when it cannot be read.
std::string read_package_file(const std::filesystem::path& path);

}  // namespace kgate::package
