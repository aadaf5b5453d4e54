// Op files compiled into the program: kgate_add_kernel(OP_FILE ...) embeds the file's bytes in the
// kernel's object library, so a kernel never depends on its source tree at run time (an installed
// kgate, or a consumer's build copied elsewhere, still knows its ops). The catalogue reads an op
// file from here before it reads the disk. Torch-free.
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace kgate {

/// Records `size` bytes of `text` as the op file at `path`; returns true (for static registration).
bool embed_op_file(const char* path, const unsigned char* text, std::size_t size);
/// The op files the module loaded under the last begin_module_capture() embedded (path -> bytes):
/// a base build's definitions, kept apart from the head's (kgate check --baseline-build compares
/// them).
std::map<std::string, std::string> captured_op_files();
/// The embedded bytes of the op file at `path`, or nullptr when none was embedded.
const std::string* embedded_op_file(const std::string& path);

}  // namespace kgate
