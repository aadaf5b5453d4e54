// Op files ("format": "kgate-op/1"): an op declared as data, with its reference written in
// TorchScript, so that a team can gate kernels of any op without changing kgate. This part is
// torch-free: it reads and checks the file into an OpSignature and the reference's source text;
// references/script_op.cpp compiles the source with LibTorch's TorchScript frontend.
//
// Every problem is reported as "FILE: FIELD: message" (all of them at once, as for package
// manifests), and a file with any problem is refused (exit 4).
#pragma once

#include <string>
#include <vector>

#include "core/op_signature.hpp"

namespace kgate {

/// An op file, read and checked.
struct OpFile {
  std::string path;
  OpSignature signature;  ///< origin = path
  std::string reference;  ///< TorchScript source defining reference(...)
  std::string oracle;  ///< TorchScript source defining oracle(...) ("" : the reference in float64)
  /// TorchScript source defining magnitude(...) (conditioning.magnitude; "" : the oracle on
  /// |inputs|)
  std::string magnitude;
  std::string text;  ///< the file's bytes (two files that define one op alike are one op)
};

/// Largest op file accepted (a reference is a few lines of TorchScript).
inline constexpr std::size_t kMaxOpFileBytes = 256 * 1024;

/// Reads and checks the op file at `path`; throws Error(usage) listing every problem.
OpFile read_op_file(const std::string& path);
/// The same for text already read (`path` names it in messages).
OpFile parse_op_file(const std::string& text, const std::string& path);

/// What makes two op files the same op: they are equal after parsing in every field but
/// `summary`, `description` and `$schema` (a looser tolerance, another rule, another NaN contract
/// or other speed shapes make another op). Returns the fields where `a` and `b` differ, as paths
/// ("tolerance.f32.atol", "inputs[0].shape"), at most 20; empty: the same op. Text that does not
/// parse differs as "(document)".
std::vector<std::string> op_file_differences(const std::string& a, const std::string& b);

/// The op files a --ops argument names: the file itself; for a kernel package's directory (it holds
/// kgate.json), the op file its manifest names; else every *.json file of a directory (sorted;
/// kgate-pack.json left out). Throws Error(usage) when the path is none of these.
std::vector<std::string> op_file_paths(const std::string& path);

/// The value kinds of ValueDraw, for messages and the schema.
const std::vector<std::string>& value_draw_kinds();

}  // namespace kgate
