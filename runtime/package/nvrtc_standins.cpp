#include "runtime/package/nvrtc_standins.hpp"

#include <cuda.h>  // CUDA_VERSION, the toolkit NVRTC comes with

namespace kgate::package {

namespace {

// A libcu++ header <cuda/std/NAME>, its names also in std.
std::string from_libcudacxx(const std::string& name, const std::string& global_names = "") {
  std::string text =
      "// kgate's stand-in for <" + name + "> under NVRTC: libcu++'s <cuda/std/" + name +
      ">, its names also in std\n#pragma once\n#include <cuda/std/" + name +
      ">\nnamespace cuda { namespace std {} }\nnamespace std { using namespace cuda::std; }\n";
  return text + global_names;
}

const char* const kIntegerTypes =
    "using cuda::std::int8_t;\nusing cuda::std::int16_t;\nusing cuda::std::int32_t;\nusing "
    "cuda::std::int64_t;\n"
    "using cuda::std::uint8_t;\nusing cuda::std::uint16_t;\nusing cuda::std::uint32_t;\nusing "
    "cuda::std::uint64_t;\n"
    "using cuda::std::intptr_t;\nusing cuda::std::uintptr_t;\nusing cuda::std::intmax_t;\nusing "
    "cuda::std::uintmax_t;\n";

const char* const kSizeTypes = "using cuda::std::size_t;\nusing cuda::std::ptrdiff_t;\n";

// <cuda/std/cfloat> leaves the C macros out under NVRTC.
const char* const kFloatMacros = R"(#ifndef FLT_MAX
#define FLT_MAX 3.402823466e+38F
#endif
#ifndef FLT_MIN
#define FLT_MIN 1.175494351e-38F
#endif
#ifndef FLT_EPSILON
#define FLT_EPSILON 1.192092896e-07F
#endif
#ifndef FLT_MANT_DIG
#define FLT_MANT_DIG 24
#endif
#ifndef FLT_DIG
#define FLT_DIG 6
#endif
#ifndef DBL_MAX
#define DBL_MAX 1.7976931348623157e+308
#endif
#ifndef DBL_MIN
#define DBL_MIN 2.2250738585072014e-308
#endif
#ifndef DBL_EPSILON
#define DBL_EPSILON 2.2204460492503131e-16
#endif
#ifndef DBL_MANT_DIG
#define DBL_MANT_DIG 53
#endif
#ifndef DBL_DIG
#define DBL_DIG 15
#endif
)";

const char* const kAlgorithm =
    R"(// kgate's stand-in for <algorithm> under NVRTC: min, max, clamp and swap
#pragma once
#include <cuda/std/utility>
namespace std {
using namespace cuda::std;
template <class T> __host__ __device__ constexpr const T& min(const T& a, const T& b) { return b < a ? b : a; }
template <class T> __host__ __device__ constexpr const T& max(const T& a, const T& b) { return a < b ? b : a; }
template <class T> __host__ __device__ constexpr const T& clamp(const T& v, const T& lo, const T& hi) {
  return v < lo ? lo : hi < v ? hi : v;
}
using cuda::std::swap;
}  // namespace std
)";

}  // namespace

const std::vector<std::pair<std::string, std::string>>& nvrtc_standin_headers() {
  static const std::vector<std::pair<std::string, std::string>> headers = [] {
    std::vector<std::pair<std::string, std::string>> h;
    const std::string quiet = "#pragma once\n";
    h.emplace_back("cstdint", from_libcudacxx("cstdint", kIntegerTypes));
    h.emplace_back("stdint.h", from_libcudacxx("cstdint", kIntegerTypes));
    h.emplace_back("cstddef", from_libcudacxx("cstddef", kSizeTypes));
    h.emplace_back("stddef.h", from_libcudacxx("cstddef", kSizeTypes));
    h.emplace_back("climits", from_libcudacxx("climits"));
    h.emplace_back("limits.h", from_libcudacxx("climits"));
    h.emplace_back("cfloat", from_libcudacxx("cfloat", kFloatMacros));
    h.emplace_back("float.h", from_libcudacxx("cfloat", kFloatMacros));
    h.emplace_back("cmath", from_libcudacxx("cmath"));
    h.emplace_back("math.h", from_libcudacxx("cmath"));
    h.emplace_back("cstdlib", from_libcudacxx("cstdlib"));
    h.emplace_back("stdlib.h", from_libcudacxx("cstdlib"));
    h.emplace_back("cstring", from_libcudacxx("cstring"));
    h.emplace_back("string.h", from_libcudacxx("cstring"));
    h.emplace_back("limits", from_libcudacxx("limits"));
    h.emplace_back("type_traits", from_libcudacxx("type_traits"));
    h.emplace_back("utility", from_libcudacxx("utility"));
    h.emplace_back("array", from_libcudacxx("array"));
    h.emplace_back("tuple", from_libcudacxx("tuple"));
    h.emplace_back("algorithm", kAlgorithm);
    // NVRTC declares device printf and assert itself.
    h.emplace_back("cstdio",
                   "// kgate's stand-in for <cstdio> under NVRTC (device printf is built in)\n" +
                       quiet + "namespace std { using ::printf; }\n");
    h.emplace_back(
        "stdio.h",
        "// kgate's stand-in for <stdio.h> under NVRTC (device printf is built in)\n" + quiet);
    h.emplace_back("cassert",
                   "// kgate's stand-in for <cassert> under NVRTC (assert is built in)\n" + quiet);
    h.emplace_back("assert.h",
                   "// kgate's stand-in for <assert.h> under NVRTC (assert is built in)\n" + quiet);
    // Host-API headers that kernel files include beside their kernels and no device code calls:
    // empty (their declarations are host functions, which NVRTC refuses).
    for (const char* host : {"cuda.h", "cublas_v2.h", "cublas.h", "cublas_api.h", "cublasLt.h",
                             "curand.h", "cusparse.h", "cufft.h", "nvml.h"})
      h.emplace_back(
          host, std::string("// kgate's stand-in for <") + host +
                    "> under NVRTC: a host API, of which device code uses nothing\n" + quiet +
                    (std::string(host) == "cuda.h" ? "#ifndef CUDA_VERSION\n#define CUDA_VERSION " +
                                                         std::to_string(CUDA_VERSION) + "\n#endif\n"
                                                   : std::string()));
    return h;
  }();
  return headers;
}

const std::string& nvrtc_prelude() {
  static const std::string text =
      "typedef unsigned int uint;\ntypedef unsigned short ushort;\n"
      // Instantiated only by the parameter probe (validate.cpp): its mangled name carries F.
      "template <typename kgate_F> __global__ void kgate_param_probe() {}\n";
  return text;
}

}  // namespace kgate::package
