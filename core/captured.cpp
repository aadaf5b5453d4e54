#include "core/captured.hpp"

#include <map>
#include <optional>

#include "core/error.hpp"
#include "core/expr.hpp"
#include "core/safe_text.hpp"
#include "core/safetensors.hpp"

namespace kgate {
namespace {

[[noreturn]] void refuse_captured(const std::string& name, const std::string& what) {
  throw Error(ErrorKind::package, "captured inputs " + quote_untrusted(name) + ": " + what);
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string shape_text(const std::vector<std::string>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + shape[i];
  return s + "]";
}

}  // namespace

const char* safetensors_dtype_of(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return "F16";
    case DType::bf16:
      return "BF16";
    case DType::f32:
      return "F32";
    case DType::f64:
      return "F64";
    case DType::i32:
      return "I32";
    case DType::i64:
      return "I64";
    case DType::i8:
      return "I8";
    case DType::u8:
      return "U8";
    case DType::b8:
      return "BOOL";
    case DType::f8e4m3:
      return "F8_E4M3";
  }
  return "?";
}

Case captured_case(const OpSignature& op, const std::string& name, const std::string& path,
                   uint64_t seed) {
  return captured_case(op, name, read_safetensors_header(path), seed);
}

Case captured_case(const OpSignature& op, const std::string& name, const SafetensorsFile& file,
                   uint64_t seed) {
  if (name.empty() || name.find(':') != std::string::npos)
    refuse_captured(name, "the name must be non-empty and hold no ':' (it is part of the case id)");
  const std::string& path = file.path;

  // The case's dtype: that of the inputs whose dtype is the case's.
  std::optional<DType> case_dtype;
  for (const auto& in : op.inputs) {
    const auto* t = file.find(in.name);
    if (!t)
      refuse_captured(
          name,
          "holds no tensor " + quote_untrusted(in.name) + "; op " + op.name + " takes " + [&] {
            std::string names;
            for (const auto& i : op.inputs) names += (names.empty() ? "" : ", ") + i.name;
            return names;
          }());
    if (!in.dtype.empty() || case_dtype) continue;
    for (DType d : op.dtypes)
      if (t->dtype == safetensors_dtype_of(d)) case_dtype = d;
    if (!case_dtype) {
      std::string allowed;
      for (DType d : op.dtypes)
        allowed += (allowed.empty() ? "" : ", ") + std::string(safetensors_dtype_of(d));
      refuse_captured(name, "tensor " + quote_untrusted(in.name) + " is " +
                                quote_untrusted(t->dtype) + "; op " + op.name + " takes " +
                                allowed);
    }
  }
  for (const auto& t : file.tensors) {
    bool known = false;
    for (const auto& in : op.inputs) known = known || in.name == t.name;
    if (!known)
      refuse_captured(name, "tensor " + quote_untrusted(t.name) + " is not an input of op " +
                                op.name + " (outputs are computed by the reference, not read)");
  }

  Case c;
  c.op = op.name;
  c.dtype = case_dtype.value_or(op.dtypes.empty() ? DType::f32 : op.dtypes.front());
  c.layout = Layout::contiguous;
  c.values = Values::captured;
  c.captured = name;
  c.captured_path = path;
  c.seed = seed;
  c.family = "captured";

  // Symbols: from the dims that are a bare symbol, then from __metadata__.
  std::map<std::string, int64_t> bound;
  for (const auto& in : op.inputs) {
    const auto* t = file.find(in.name);
    const DType want = op.tensor_dtype(in, c.dtype);
    if (t->dtype != safetensors_dtype_of(want))
      refuse_captured(name, "tensor " + quote_untrusted(in.name) + " is " +
                                quote_untrusted(t->dtype) + ", expected " +
                                safetensors_dtype_of(want) + " (" + dtype_name(want) + ")");
    if (t->shape.size() != in.shape.size())
      refuse_captured(name, "tensor " + quote_untrusted(in.name) + " has shape " +
                                shape_text(t->shape) + ", op " + op.name + " gives it rank " +
                                std::to_string(in.shape.size()) + ": " + shape_text(in.shape));
    for (size_t d = 0; d < in.shape.size(); ++d) {
      if (!op.symbol(in.shape[d])) continue;
      const auto [it, inserted] = bound.emplace(in.shape[d], t->shape[d]);
      if (!inserted && it->second != t->shape[d])
        refuse_captured(name, "symbol " + in.shape[d] + " is " + std::to_string(it->second) +
                                  " in one tensor and " + std::to_string(t->shape[d]) +
                                  " in tensor " + quote_untrusted(in.name));
    }
  }
  for (const auto& s : op.symbols) {
    const auto meta = file.metadata.find(s.name);
    if (meta != file.metadata.end()) {
      int64_t v = 0;
      try {
        size_t used = 0;
        v = std::stoll(meta->second, &used);
        if (used != meta->second.size() || v < 0) throw std::invalid_argument("bad");
      } catch (const std::exception&) {
        refuse_captured(name, "__metadata__." + s.name + " is " + quote_untrusted(meta->second) +
                                  ", not a size");
      }
      const auto [it, inserted] = bound.emplace(s.name, v);
      if (!inserted && it->second != v)
        refuse_captured(name, "__metadata__." + s.name + " says " + std::to_string(v) +
                                  ", the tensors " + std::to_string(it->second));
    }
    const auto it = bound.find(s.name);
    if (it == bound.end())
      refuse_captured(name, "symbol " + s.name + " of op " + op.name +
                                " is in no input's shape: give it in the file's __metadata__ (\"" +
                                s.name + "\": \"<value>\")");
    c.dims.emplace_back(s.name, it->second);
  }
  // Dims that are expressions ("2*H") must agree with the symbols; relations must hold.
  const auto values = package::symbol_values(c.dims);
  for (const auto& in : op.inputs) {
    const auto* t = file.find(in.name);
    for (size_t d = 0; d < in.shape.size(); ++d) {
      const int64_t want = package::evaluate_expr(in.shape[d], values);
      if (want != t->shape[d])
        refuse_captured(name, "tensor " + quote_untrusted(in.name) + " has shape " +
                                  shape_text(t->shape) + "; with " +
                                  c.id().substr(0, c.id().find(":contiguous")) + " op " + op.name +
                                  " expects dim " + std::to_string(d) + " (" + in.shape[d] +
                                  ") = " + std::to_string(want));
    }
  }
  for (const auto& r : op.relations)
    if (package::evaluate_expr(r, values) == 0)
      refuse_captured(name, "the shapes break op " + op.name + "'s relation " + r);
  return c;
}

}  // namespace kgate
