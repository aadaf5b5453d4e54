// The op catalogue (torch-free view): every op kgate knows, by name.
#pragma once

#include <string>
#include <vector>

#include "core/op_signature.hpp"

namespace kgate {

/// All ops, sorted by name.
const std::vector<OpSignature>& op_catalogue();
/// The op of that name; throws a usage Error listing the known ops.
const OpSignature& find_op(const std::string& name);

}  // namespace kgate
