// The op files of the kernels compiled into the program: their bytes, embedded by
// kgate_add_kernel(OP_FILE ...) in the kernel's object library so that a kernel never depends on
// its source tree at run time (an installed kgate, or a consumer's build copied elsewhere, still
// knows its ops), and the op file each registered kernel names. The kernel registry (runtime/)
// writes here, the op catalogue (references/) reads here: neither calls the other. Torch-free.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace kgate {

/// Records `size` bytes of `text` as the op file at `path`; returns true (for static registration).
/// Between begin_op_file_capture() and end_op_file_capture() the file is kept apart instead
/// (captured_op_files).
bool embed_op_file(const char* path, const unsigned char* text, std::size_t size);
/// The op files the module loaded under the last begin_module_capture() embedded (path -> bytes):
/// a base build's definitions, kept apart from the head's (kgate check --baseline-build compares
/// them).
std::map<std::string, std::string> captured_op_files();
/// The embedded bytes of the op file at `path`, or nullptr when none was embedded.
const std::string* embedded_op_file(const std::string& path);

/// Starts keeping the op files embedded from now on apart (a base build's module being loaded:
/// begin_module_capture), forgetting those of the previous capture.
void begin_op_file_capture();
/// Ends it: op files embedded from now on are the program's own again.
void end_op_file_capture();

/// Records that the process's kernel `kernel` is defined against the op file at `path` (the kernel
/// registry does, for every kernel it registers that names one).
void declare_kernel_op_file(const std::string& kernel, const std::string& path);
/// The op files the process's kernels name, in the order of the kernels' names (a file named by
/// several kernels appears once per kernel); the op catalogue loads them on first use.
std::vector<std::string> kernel_op_files();

}  // namespace kgate
