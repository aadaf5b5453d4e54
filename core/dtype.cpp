// DType names, sizes and limits.
#include "core/dtype.hpp"

#include "core/error.hpp"

namespace kgate {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::i8:
      return "i8";
    case DType::u8:
      return "u8";
    case DType::b8:
      return "bool";
    case DType::f8e4m3:
      return "f8e4m3";
  }
  return "?";
}

DType parse_dtype(const std::string& name) {
  if (name == "f16" || name == "float16" || name == "half") return DType::f16;
  if (name == "bf16" || name == "bfloat16") return DType::bf16;
  if (name == "f32" || name == "float32" || name == "float") return DType::f32;
  if (name == "f64" || name == "float64" || name == "double") return DType::f64;
  if (name == "i32" || name == "int32") return DType::i32;
  if (name == "i64" || name == "int64") return DType::i64;
  if (name == "i8" || name == "int8") return DType::i8;
  if (name == "u8" || name == "uint8") return DType::u8;
  if (name == "bool" || name == "b8") return DType::b8;
  if (name == "f8e4m3" || name == "float8_e4m3fn" || name == "fp8_e4m3" || name == "e4m3")
    return DType::f8e4m3;
  throw_usage("unknown dtype '" + name +
              "': expected one of f16, bf16, f32, f64, i32, i64, i8, u8, bool, f8e4m3");
}

const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> all = {DType::f16, DType::bf16,  DType::f32, DType::f64,
                                         DType::i32, DType::i64,   DType::i8,  DType::u8,
                                         DType::b8,  DType::f8e4m3};
  return all;
}

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::i8:
    case DType::u8:
    case DType::b8:
    case DType::f8e4m3:
      return 1;
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f64:
    case DType::i64:
      return 8;
  }
  return 0;
}

bool is_floating(DType dtype) {
  return dtype == DType::f16 || dtype == DType::bf16 || dtype == DType::f32 ||
         dtype == DType::f64 || dtype == DType::f8e4m3;
}

double dtype_max(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return 65504.0;
    case DType::bf16:
      return 3.3895313892515355e38;
    case DType::f32:
      return 3.4028234663852886e38;
    case DType::f64:
      return 1.7976931348623157e308;
    case DType::i32:
      return 2147483647.0;
    case DType::i64:
      return 9.223372036854775807e18;
    case DType::i8:
      return 127.0;
    case DType::u8:
      return 255.0;
    case DType::b8:
      return 1.0;
    case DType::f8e4m3:
      return 448.0;
  }
  return 0;
}

double dtype_eps(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return 9.765625e-4;
    case DType::bf16:
      return 7.8125e-3;
    case DType::f32:
      return 1.1920928955078125e-7;
    case DType::f64:
      return 2.220446049250313e-16;
    case DType::f8e4m3:
      return 0.125;
    default:
      return 1.0;
  }
}

}  // namespace kgate
