// The torch side of an op file: inputs drawn as the file declares, and the reference (and oracle)
// compiled from its TorchScript source by LibTorch's own frontend (torch::jit::compile), in
// process, with no Python interpreter. The only translation unit that includes <torch/jit.h>.
#pragma once

#include "core/op_file.hpp"
#include "references/op_reference.hpp"

namespace kgate {

/// Compiles the op file's TorchScript and checks its functions against the file: every parameter
/// is an input, an attribute, a shape symbol or `compute`; inputs are Tensors; the result is a
/// Tensor, a tuple or a list of them; no op that reads or writes files is called. Throws
/// Error(usage) "FILE: reference: ..." with TorchScript's own message and line on a compile error.
OpReference script_reference(const OpFile& file);

/// TorchScript ops a reference may not call (they reach files, the network or other processes).
bool script_op_forbidden(const std::string& qualified_name);

/// Inputs of case `c` drawn per the declared ValueDraws (shared by op files; exposed for tests).
Tensors draw_inputs(const Case& c, const OpSignature& op, at::Device device);

}  // namespace kgate
