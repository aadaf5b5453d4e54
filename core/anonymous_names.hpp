// nvcc names each anonymous namespace `_GLOBAL__N__<8 hex>_<len>_<file>_<tail>`, the hex digits a
// hash of the source's path, the tail the file's first external symbol or, in a file that has
// none, `<8 hex>_<digits>` that change with every compile (the same directory too): one commit
// built twice gives its kernels, their mangled names and the strings that hold them (host .rodata,
// CUBIN and PTX names) different bytes. The module digest and the launch record read names through
// this, so that only the code counts.
#pragma once

#include <string>
#include <string_view>

namespace kgate {

/// Zeroes, in place, the build-dependent digits of every anonymous-namespace name in `bytes`: the 8
/// hex after `_GLOBAL__N__`, and a `_<8 hex>` or `_<8 hex>_<digits>` tail that ends the name (where
/// its end is known: a mangled length before it, or a character that cannot continue a name after
/// it). The length and everything else are kept, so offsets into the bytes stay valid (a tail
/// whose digits differ in number, e.g. 99999 and 100000, still differs).
void normalize_anonymous_names(std::string& bytes);

/// A copy of `bytes`, normalised.
std::string normalized_anonymous_names(std::string_view bytes);

}  // namespace kgate
