// Element types of the tensors kgate passes to kernels.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kgate {

/// f8e4m3 is OCP FP8 E4M3 (torch.float8_e4m3fn: no infinities, one NaN pattern per sign, max 448);
/// it is an output dtype (quantization), not a case dtype. b8 is bool, one byte holding 0 or 1.
enum class DType { f16, bf16, f32, f64, i32, i64, i8, u8, b8, f8e4m3 };

/// Short name used in case ids, configs and reports: "f16", "bf16", "f32", "f64", "i32", "i64",
/// "i8", "u8", "bool", "f8e4m3".
const char* dtype_name(DType dtype);
/// Parses a short name (also accepts "float32", "half", "bfloat16", "int8", "float8_e4m3fn", ...);
/// throws a usage Error.
DType parse_dtype(const std::string& name);
std::size_t dtype_size(DType dtype);
bool is_floating(DType dtype);
/// Every dtype, in declaration order (for messages and tests).
const std::vector<DType>& all_dtypes();
/// Largest finite value of a floating dtype.
double dtype_max(DType dtype);
/// Machine epsilon (spacing at 1.0) of a floating dtype.
double dtype_eps(DType dtype);

}  // namespace kgate
