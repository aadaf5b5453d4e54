// The C++ parameter types of a package's kernels, read from their mangled names (NVRTC lowers
// every non-extern "C" kernel to an Itanium-ABI name, which encodes the parameter types), so that
// `kgate validate` can catch arguments of the right size and the wrong type without a GPU: an
// i32 shape for an `unsigned` parameter, an f32 scalar for an `int`, a tensor for a `long long`,
// or an f16 tensor handed to a `float*`. extern "C" kernels carry no types: only their sizes are
// checked (nvrtc_cache.cpp). Torch-free, no GPU.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/op_signature.hpp"
#include "runtime/package/manifest.hpp"
#include "runtime/package/nvrtc_cache.hpp"

namespace kgate::package {

/// One kernel parameter's type, as far as kgate can tell.
struct ParamType {
  enum class Kind {
    unknown,  ///< not read (a struct by value, a function pointer, a reference)
    pointer,  ///< T* (any qualifiers)
    scalar,   ///< an integer or floating type passed by value
  };
  Kind kind = Kind::unknown;
  std::optional<ScalarType>
      scalar;  ///< scalar: i32, u32, i64, u64, f32 or f64 (nullopt: short, char, bool, ...)
  std::optional<DType> pointee;  ///< pointer: the element type when it is one of kgate's dtypes
  std::string text;              ///< as demangled: "float const*", "unsigned int"
};

/// The parameter types of the kernel whose lowered (mangled) name is `mangled`; nullopt for a name
/// that is not an Itanium-mangled function (an extern "C" kernel) or does not demangle.
std::optional<std::vector<ParamType>> mangled_param_types(const std::string& mangled);

/// The parameter types carried by the mangled name of kgate_param_probe<decltype(&KERNEL)> (the
/// function-pointer type of its template argument); nullopt when it does not demangle so.
std::optional<std::vector<ParamType>> probe_param_types(const std::string& mangled);

/// The probe's name expression for a kernel: "kgate_param_probe<decltype(&KERNEL)>".
std::string param_probe_expression(const std::string& kernel);

/// Each launch's "args" against its kernel's parameter types for every guard dtype: a tensor or
/// workspace where the kernel takes a value (or the reverse), a value of another type than the
/// parameter's ("type": "u32" for an `int`), and a tensor whose element type for that dtype (from
/// the op's signature) is not the pointer's ("f16" tensor to a `float*`). One problem per launch
/// (the first mismatch), naming the argument, the kernel, the dtype and both types.
/// `declared`: the types of kernels whose lowered names carry none (extern "C"), by name
/// expression, from a probe compile.
std::vector<ManifestProblem> args_match_types(
    const PackageManifest& manifest, const OpSignature& op, const CompileResult& compiled,
    const std::map<std::string, std::vector<ParamType>>& declared = {});

}  // namespace kgate::package
