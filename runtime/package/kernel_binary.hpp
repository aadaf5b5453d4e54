// Reading a compiled image's kernels on the host, without a GPU or driver: the function symbols of
// a CUBIN, the parameter table of each kernel, and the .entry names and parameters of a PTX text.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kgate::package {

/// One kernel parameter as the compiled code lays it out.
struct KernelParam {
  uint32_t ordinal = 0;
  uint32_t offset = 0;  ///< bytes into the parameter buffer
  uint32_t size = 0;    ///< bytes
};

/// The names of the function symbols of an ELF64 image (a CUBIN's kernels and device functions);
/// nullopt when the image is not ELF64 or is malformed.
std::optional<std::vector<std::string>> elf_function_names(const std::string& image);

/// The parameter table of every kernel of a CUBIN (its .nv.info.NAME sections, attribute
/// EIATTR_KPARAM_INFO: ordinal, offset and size of each parameter), by kernel symbol; nullopt when
/// the image is not ELF64. The format is not documented: kgate checks it against the driver's
/// cuFuncGetParamInfo wherever a package runs.
std::optional<std::map<std::string, std::vector<KernelParam>>> cubin_kernel_params(
    const std::string& image);

/// The parameters of a PTX kernel's .entry (sizes from their types, offsets aligned); empty when
/// the kernel is not there or a declaration is not understood.
std::vector<KernelParam> ptx_kernel_params(const std::string& ptx, const std::string& kernel);

/// The names of a PTX text's kernels (.entry).
std::vector<std::string> ptx_entry_names(const std::string& ptx);

}  // namespace kgate::package
