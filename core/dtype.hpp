// Element types of the tensors kgate passes to kernels.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kgate {

enum class DType { f16, bf16, f32, f64, i32, i64 };

/// Short name used in case ids, configs and reports: "f16", "bf16", "f32", "f64", "i32", "i64".
const char* dtype_name(DType dtype);
/// Parses a short name (also accepts "float32", "half", "bfloat16", ...); throws a usage Error.
DType parse_dtype(const std::string& name);
std::size_t dtype_size(DType dtype);
bool is_floating(DType dtype);
/// Largest finite value of a floating dtype.
double dtype_max(DType dtype);
/// Machine epsilon (spacing at 1.0) of a floating dtype.
double dtype_eps(DType dtype);

}  // namespace kgate
