// The code digest of a module (a kernel's shared object, kgate check --baseline-build): its host
// code and data and every CUBIN and PTX its fatbinary holds, without what changes with the build
// directory. Host code only (an ELF and fatbinary reader): it runs and is tested without a GPU.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kgate::cuda {

/// The fatbinary bytes (`.nv_fatbin`) in a form that holds what runs and not where it was built:
/// per entry its header (less its sizes), and for a CUBIN its per-function digests
/// (cubin_function_digests: no line or debug information), for PTX its text without `.file`,
/// `.loc` and debug sections; compressed entries (zstd, through libzstd.so.1 when it loads)
/// decompressed first; anonymous-namespace names normalised (core/anonymous_names.hpp). Bytes it
/// cannot read stay as they are (a change, the safe side).
std::string canonical_fatbin(std::string_view fatbin);

/// PTX text without what names the build: `.file` and `.loc` lines and `.section .debug_*` blocks
/// (their opening brace on the section's line or a later one), anonymous-namespace names
/// normalised.
std::string canonical_ptx(std::string text);

/// SHA-256 of a module's code: its .text, .rodata, .data and .data.rel.ro sections with
/// anonymous-namespace names normalised, and its .nv_fatbin in canonical form (not its build id,
/// symbol tables or debug information). "" when the file is no ELF object.
std::string module_code_digest(const std::string& path);

/// The absolute source paths a module holds in .rodata (__FILE__ of TORCH_LIBRARY, TORCH_CHECK,
/// assert: "/src/ops.cpp"), sorted: what makes one commit built in two directories differ when
/// the build does not map its directories out (-ffile-prefix-map). Empty when the file is no ELF.
std::vector<std::string> embedded_source_paths(const std::string& path);

}  // namespace kgate::cuda
