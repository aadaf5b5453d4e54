// `kgate validate PKG`: check a package's manifest and files, then compile it with NVRTC (no GPU
// needed), collecting every problem for the CLI to print (one per line) before it exits 4.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runtime/package/manifest.hpp"
#include "runtime/package/nvrtc_cache.hpp"

namespace kgate::package {

/// What validate_package does.
struct ValidateOptions {
  ManifestCheckOptions check;  ///< op catalogue look-up for op / tensor / attribute names
  bool compile = true;         ///< compile with NVRTC when the manifest is clean
  CompileOptions compile_options;
};

/// The outcome of validating one package.
struct ValidationReport {
  std::filesystem::path manifest_path;
  std::vector<ManifestProblem> problems;  ///< empty: the package is valid
  PackageManifest manifest;               ///< as far as it could be read
  std::optional<CompileResult> compiled;  ///< set when compilation ran and succeeded

  bool ok() const { return problems.empty(); }
};

/// Checks the manifest (every problem), then, when it is clean and `options.compile` is set,
/// compiles the package (a compile error becomes a problem carrying NVRTC's log) and, with the
/// op known, checks each launch's argument types against the kernels' (args_match_types). Throws
/// only for errors outside the package: an invalid --arch or an unusable cache directory
/// (Error(usage)).
ValidationReport validate_package(const std::filesystem::path& dir,
                                  const ValidateOptions& options = {});

/// A one-line summary for a valid package: name, version, op, kernels and the compile outcome,
/// e.g. "softmax_rows 1.0.0 (op softmax): 1 launch, 1 kernel; compiled for sm_90 in 0.41 s".
std::string format_summary(const ValidationReport& report);

}  // namespace kgate::package
