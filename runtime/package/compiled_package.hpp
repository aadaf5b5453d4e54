// A package compiled into the build: kgate_add_kernel(NAME PACKAGE dir) has nvcc compile the
// package's sources with a generated translation unit (kgate-package-source writes it) that holds
// the manifest's bytes and, for every kernel name expression of its launches, the host stub nvcc
// made. Registered as the kernel NAME, it runs the manifest's launch plan (guard, launches, grid,
// block, arguments, workspaces) on those functions: a kernel that has a package is described once,
// by its kgate.json. Torch-free and light: nvcc compiles this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/kernel.hpp"

namespace kgate {
struct OpSignature;
}

namespace kgate::package {

/// A kernel of the package as nvcc compiled it: its name expression in the manifest
/// ("ns::k<float>") and its host stub's address.
struct CompiledFunction {
  const char* name_expression;
  const void* function;
};

/// What the generated translation unit registers.
struct CompiledPackage {
  const char* kernel;    ///< the kernel's name (kgate_add_kernel's NAME)
  const char* op;        ///< the manifest's "op"
  const char* source;    ///< the package directory (relative to the project's source directory when
                         ///< inside it)
  const char* manifest;  ///< kgate.json's bytes, as built
  std::size_t manifest_size;
  const CompiledFunction* functions;
  std::size_t function_count;
  const int64_t* tile_sizes;  ///< TILE_SIZES, beside those the guard gives
  std::size_t tile_count;
  bool timed;    ///< false: UNTIMED (a correctness twin)
  bool mutant;   ///< MUTANT (or CONTROL): KernelInfo::mutant
  bool control;  ///< CONTROL: KernelInfo::control
  /// The op catalogue's lookup (references/catalogue.hpp: lookup_op).
  const OpSignature* (*lookup_op)(const std::string&);
};

/// The KernelInfo to register: name, op, backend cuda, source and timed now; the rest (the
/// manifest checked against the op, dtypes, tile sizes, guard, launch) when the kernel is
/// completed (KernelInfo::complete), after static initialization. Errors name the kernel and the
/// manifest's fields.
KernelInfo compiled_package_kernel(const CompiledPackage& package);

}  // namespace kgate::package
