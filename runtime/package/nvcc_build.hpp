// kgate pack's nvcc build. Sources that only nvcc compiles (a header-only library that includes
// <vector> or <iostream> and defines host classes beside its kernels) cannot go through NVRTC. Such
// a package asks for a build at pack time, "build": {"compiler": "nvcc", "archs": [...], "flags":
// [...], "instantiate": true}; kgate pack runs the toolkit's nvcc (never at check time: nvcc runs
// the host compiler and reads host headers, which the check-time sandbox does not allow) into a
// fatbin shipped in the packed package ("fatbin"), and records the exact command and the tool
// versions beside it ("build.record"). Check time loads that fatbin as any precompiled one, its
// kernels named by their C++ names (kernel_names.hpp).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kgate::package {

/// Where the build's files go inside the packed package.
inline constexpr const char* kBuildDir = "_built";

/// What a manifest's "build" asks for.
struct BuildSpec {
  std::vector<std::string> archs;  ///< "sm_90", ...; default {"sm_90"}
  std::vector<std::string> flags;  ///< allow-listed nvcc flags (nvcc_flag_problem)
  bool instantiate = true;         ///< generate the unit that takes every kernel's address
};

/// What kgate pack did, recorded in the packed manifest as "build.record".
struct BuildRecord {
  std::string fatbin;                 ///< the fatbin, relative to the package
  std::string unit;                   ///< the translation unit nvcc compiled, relative to it
  std::vector<std::string> command;   ///< nvcc's argv, exactly as run (in the package directory)
  std::string nvcc_version;           ///< the release and build lines of `nvcc --version`
  std::string host_compiler;          ///< the host compiler nvcc ran (-ccbin)
  std::string host_compiler_version;  ///< the first line of its --version
  std::vector<std::string> kernels;   ///< the kernels the unit instantiates (C++ names)
};

/// Why `flag` is not an nvcc flag a package may ask for, or "" when it is: -std=c++NN, -O0..-O3,
/// -DNAME[=VALUE], -UNAME, -lineinfo, --use_fast_math, --fmad/--ftz/--prec-div/--prec-sqrt=
/// true|false, -maxrregcount=N, --expt-relaxed-constexpr, --extended-lambda,
/// --extra-device-vectorization, -w. (Flags that choose programs or files, such as -ccbin, -I or
/// -Xcompiler, are refused: the package's include_dirs are passed by kgate.)
std::string nvcc_flag_problem(const std::string& flag);

/// The nvcc kgate pack runs: $CUDA_HOME/bin/nvcc, else $CUDA_PATH/bin/nvcc, else the toolkit kgate
/// was built with, else /usr/local/cuda/bin/nvcc; empty when none is there.
std::filesystem::path find_nvcc();

/// The host compiler nvcc is told to use (-ccbin): $CUDAHOSTCXX when set, else g++, c++ or clang++
/// from PATH; empty when none is found.
std::filesystem::path find_host_compiler();

/// Compiles the package in `dir` (the packed copy: every path inside it) with nvcc into
/// `_built/<name>.fatbin`: one translation unit `_built/kgate_build.cu` that #includes `sources` in
/// order and, with `spec.instantiate`, takes the address of each of `kernels` (the launches' C++
/// name expressions), which makes nvcc instantiate every template kernel the manifest launches.
/// The include_dirs are passed as -I. Throws Error(package) naming `manifest` and the field, with
/// nvcc's output, when nvcc is missing or fails.
BuildRecord nvcc_build(const std::filesystem::path& dir, const std::string& name,
                       const std::vector<std::string>& sources,
                       const std::vector<std::string>& include_dirs,
                       const std::vector<std::string>& kernels, const BuildSpec& spec,
                       const std::string& manifest);

}  // namespace kgate::package
