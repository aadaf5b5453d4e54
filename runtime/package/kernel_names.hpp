// Naming a binary's kernels by their C++ names. A package of nvcc-built code (a CUBIN, a fatbin,
// PTX) holds its template kernels under mangled symbols
// ("_ZN5mylib4norm13RmsNormKernelILi8E6__halfEEvPKT0_S5_PS3_lf"); a manifest names them as C++
// does ("mylib::norm::RmsNormKernel<8, __half>", or "<8, half>"). kgate demangles each symbol with
// the C++ runtime's demangler (abi::__cxa_demangle; no GPU, no driver, no cuobjdump), drops its
// return type and parameter list, and compares the two once both are normalised: whitespace, the
// usual spellings of types (half and __half, uint32_t and unsigned int, int64_t and long, ...) and
// integer literal suffixes (8u, 8l). Host-only.
#pragma once

#include <string>
#include <vector>

namespace kgate::package {

/// The symbol demangled in full ("void ns::k<8, __half>(__half const*, int)"); the symbol itself
/// when it is not an Itanium-mangled name (an extern "C" kernel) or does not demangle.
std::string demangled_symbol(const std::string& symbol);

/// The C++ name of a kernel symbol: demangled, without return type and parameter list
/// ("ns::k<8, __half>"); the symbol itself when it does not demangle.
std::string kernel_cpp_name(const std::string& symbol);

/// `name` as names are compared: tokens joined without spaces but between two words, type
/// spellings made one (half -> __half, nv_bfloat16 -> __nv_bfloat16, uint32_t and uint ->
/// unsigned int, int32_t -> int, int64_t -> long, uint64_t and size_t -> unsigned long, int16_t ->
/// short, uint16_t -> unsigned short, int8_t -> signed char, uint8_t -> unsigned char, a lone
/// unsigned -> unsigned int, long int -> long, std:: and a leading :: dropped from those), integer
/// literal suffixes and casts dropped ((char)65 -> 65, 8u -> 8).
std::string normalised_kernel_name(const std::string& name);

/// The symbols of `symbols` that `name` names: the symbol itself when `name` is one (a mangled or
/// extern "C" name, as before); else every symbol whose C++ name equals `name` normalised, or,
/// when `name` carries a parameter list ("ns::k<float>(float const*, int)"), whose demangled
/// signature without its return type does. One: found; several: ambiguous; none: missing.
std::vector<std::string> match_kernel_name(const std::string& name,
                                           const std::vector<std::string>& symbols);

/// The message for a kernel `name` that names none or several of the kernels of `file`
/// (`symbols`, all of the file's function symbols; `matches`, what match_kernel_name found):
/// the candidates by C++ name (the closest first, up to 24), or the ambiguous ones by signature and
/// symbol, and how to name one.
std::string kernel_name_problem(const std::string& name, const std::vector<std::string>& matches,
                                const std::vector<std::string>& symbols, const std::string& file);

}  // namespace kgate::package
