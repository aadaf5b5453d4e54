// Captured inputs: a safetensors file holding one call's input tensors, by the op's input names,
// run as a fixed correctness case beside the generated ones. The case's shape symbols come from
// the tensors' shapes (a symbol no input shape shows, such as top-k's K, from the file's
// "__metadata__"), its dtype from the inputs of the case's dtype.
#pragma once

#include <cstdint>
#include <string>

#include "core/case.hpp"
#include "core/op_signature.hpp"

namespace kgate {

/// The case of captured-inputs file `path`, reported as `name` (its path as the package or the
/// command line gives it; no ':' allowed). Throws a package Error naming the file and the tensor,
/// symbol or dtype that does not fit `op`.
Case captured_case(const OpSignature& op, const std::string& name, const std::string& path,
                   uint64_t seed);

struct SafetensorsFile;
/// The same, from the header already read (read_safetensors_header): `file.path` is the case's.
Case captured_case(const OpSignature& op, const std::string& name, const SafetensorsFile& file,
                   uint64_t seed);

/// The safetensors dtype name kgate reads for `dtype` ("F32", "BF16", "I64", ...).
const char* safetensors_dtype_of(DType dtype);

}  // namespace kgate
