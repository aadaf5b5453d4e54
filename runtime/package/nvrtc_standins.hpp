// Stand-ins for the C and C++ standard headers that NVRTC cannot open (<cstdio>, <cstdint>,
// <cassert>, <algorithm>, ...), so that a kernel file that begins with them compiles as it is. Most
// are libcu++'s <cuda/std/...> (shipped with the toolkit, which NVRTC reads) with its names also in
// namespace std and, for the C headers, at global scope; <algorithm> declares min, max, clamp and
// swap; <cstdio> and <cassert> add nothing to what NVRTC declares already (device printf, assert).
// The prelude defines uint and ushort, which kernels written against glibc's <sys/types.h>
// use. A package's own header of the same name (none can have these names today: include dirs
// pass headers with an extension) would come first.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kgate::package {

/// Every stand-in, as (name an #include asks for, its text).
const std::vector<std::pair<std::string, std::string>>& nvrtc_standin_headers();

/// Text NVRTC sees before a package's sources: the prelude (uint, ushort, and the template
/// kgate_param_probe<F>, whose instantiation for decltype(&KERNEL) names an extern "C" kernel's
/// parameter types).
const std::string& nvrtc_prelude();

}  // namespace kgate::package
