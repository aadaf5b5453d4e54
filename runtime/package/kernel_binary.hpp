// Reading a compiled image's kernels on the host, without a GPU or driver: the function symbols of
// a CUBIN, the parameter table of each kernel, the .entry names and parameters of a PTX text, and
// the images of a fatbin.
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

/// One image of a fatbin container (nvcc -fatbin).
struct FatbinImage {
  bool ptx = false;         ///< PTX text; else an ELF CUBIN
  uint32_t arch = 0;        ///< the architecture's number: 90 for sm_90 (or compute_90)
  bool compressed = false;  ///< stored compressed and not readable here (data is then empty)
  std::string data;         ///< the image, decompressed where it was compressed
};

/// The images of a fatbin: its container (magic 0xBA55ED50) read on the host, images compressed
/// with LZ4 decompressed by kgate and with Zstandard through the system's libzstd.so.1 when it is
/// there; nullopt when the bytes are not a fatbin or are malformed.
std::optional<std::vector<FatbinImage>> fatbin_images(const std::string& fatbin);

/// The fatbin's CUBIN for architecture `arch` (90: sm_90), when it holds a readable one.
std::optional<std::string> fatbin_cubin(const std::string& fatbin, uint32_t arch);

/// The names of a fatbin's kernels: the function symbols of its CUBIN for `arch` when it holds
/// one, else those of every image it can read (CUBINs' symbols, PTX .entry names); nullopt when
/// it is not a fatbin or no image can be read (all compressed past what kgate can decompress).
std::optional<std::vector<std::string>> fatbin_kernel_names(const std::string& fatbin,
                                                            uint32_t arch);

}  // namespace kgate::package
