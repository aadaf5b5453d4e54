// The op catalogue (torch-free view): every op kgate knows, by name.
#pragma once

#include <string>
#include <vector>

#include "core/op_signature.hpp"

namespace kgate {

/// All ops, sorted by name: the built-in ones, then those of op files (KGATE_OPS, --ops, and the
/// op files in-tree kernels name), loaded when the catalogue is first used.
std::vector<OpSignature> op_catalogue();
/// The op of that name; throws a usage Error listing the known ops.
const OpSignature& find_op(const std::string& name);

/// The op of that name, or nullptr (the pointer stays valid).
const OpSignature* lookup_op(const std::string& name);

/// The bytes of the op file that defines op `name` in this process (embedded or read), or nullptr
/// for a built-in op or an unknown one.
const std::string* op_file_text(const std::string& name);

/// Loads the op files `path` names (a file, or every *.json of a directory) into the catalogue;
/// throws Error(usage) on an invalid file or an op name that is already taken. Loading the same
/// file twice is a no-op.
void load_op_files(const std::string& path);

/// Adds `path` to KGATE_OPS (the environment, so that worker processes load it too) and loads it.
void add_ops_path(const std::string& path);

}  // namespace kgate
