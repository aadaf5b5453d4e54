// nvcc names each anonymous namespace `_GLOBAL__N__<8 hex>_<len>_<file>_<tail>`, the hex digits a
// hash of the source's path: one commit built in two directories gives its kernels, their mangled
// names and the strings that hold them (host .rodata, CUBIN and PTX names) different bytes. The
// module digest and the launch record read names through this, so that only the code counts.
#pragma once

#include <string>
#include <string_view>

namespace kgate {

/// Zeroes, in place, the path-dependent hex digits of every anonymous-namespace name in `bytes`:
/// the 8 after `_GLOBAL__N__`, and the 8 of a `_<hex>` tail that ends the name (where its end is
/// known: a mangled length before it, or a character that cannot continue a name after it). The
/// length and everything else are kept, so offsets into the bytes stay valid.
void normalize_anonymous_names(std::string& bytes);

/// A copy of `bytes`, normalised.
std::string normalized_anonymous_names(std::string_view bytes);

}  // namespace kgate
