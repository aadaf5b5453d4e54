// Op files on the torch side: declared value draws, and TorchScript references.
#include "references/script_op.hpp"

#include <ATen/TensorOperators.h>  // the tensor arithmetic below (it brings ATen/Functions.h)
#include <ATen/ops/ones_like.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/tensor.h>

#include <torch/csrc/jit/api/compilation_unit.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/jit.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <optional>

#include "core/error.hpp"
#include "core/expr.hpp"
#include "core/functional_names.hpp"
#include "core/rng.hpp"

namespace kgate {

bool script_op_forbidden(const std::string& name) {
  // Only ATen and TorchScript's own primitives: a custom namespace is whatever some loaded library
  // registered. Within ATen, the ops that touch files or shared memory.
  const auto colon = name.find("::");
  const std::string ns = colon == std::string::npos ? std::string() : name.substr(0, colon);
  if (ns != "aten" && ns != "prim") return true;
  static const char* const kDenied[] = {"file", "save",    "load", "pickle",      "mmap",
                                        "shm",  "storage", "_ipc", "share_memory"};
  const std::string op = name.substr(colon + 2);
  return std::any_of(std::begin(kDenied), std::end(kDenied),
                     [&](const char* word) { return op.find(word) != std::string::npos; });
}

namespace {

using torch::jit::Block;
using torch::jit::Node;

// The first forbidden op called anywhere in `block` (nested blocks included), or "".
std::string forbidden_in(const Block* block) {
  for (const Node* n : block->nodes()) {
    const std::string kind = n->kind().toQualString();
    if (script_op_forbidden(kind)) return kind;
    for (const Block* b : n->blocks())
      if (auto f = forbidden_in(b); !f.empty()) return f;
  }
  return {};
}

at::ScalarType opmath(at::ScalarType t) {
  return t == at::kHalf || t == at::kBFloat16 ? at::kFloat : t;
}

int64_t eval_bound(const std::string& text, const Case& c) {
  return package::evaluate_expr(text, package::symbol_values(c.dims));
}

// Integers in [lo, hi] drawn on the host (as embedding's indices are), with the range's ends at
// the first and last element and the pile-up families on the top.
at::Tensor draw_integers(const Case& c, const ValueDraw& d, at::IntArrayRef shape, uint64_t seed,
                         DType dtype) {
  const int64_t lo = eval_bound(d.low_expr, c), hi = eval_bound(d.high_expr, c);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  if (hi < lo && n > 0)
    throw Error(ErrorKind::usage, "case " + c.id() + ": integers range [" + d.low_expr + ", " +
                                      d.high_expr + "] is empty (" + std::to_string(lo) + " > " +
                                      std::to_string(hi) + ")");
  Rng rng(seed);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = rng.uniform_int(lo, hi);
  if (d.edges) {
    if (c.values == Values::all_equal) std::fill(v.begin(), v.end(), hi);
    if (c.values == Values::clustered_max)
      for (auto& x : v)
        if (rng.coin()) x = hi;
    if (n >= 2) {
      v.front() = hi;
      v.back() = lo;
    }
  }
  return at::tensor(v, at::TensorOptions().dtype(at::kLong))
      .reshape(shape)
      .to(to_scalar_type(dtype));
}

at::Tensor draw_permutations(at::IntArrayRef shape, uint64_t seed, DType dtype) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  const int64_t row = shape.empty() ? 1 : shape.back();
  std::vector<int64_t> v(static_cast<size_t>(n));
  Rng rng(seed);
  for (int64_t start = 0; row > 0 && start < n; start += row) {
    std::iota(v.begin() + start, v.begin() + start + row, int64_t{0});
    std::shuffle(v.begin() + start, v.begin() + start + row, rng);
  }
  return at::tensor(v, at::TensorOptions().dtype(at::kLong))
      .reshape(shape)
      .to(to_scalar_type(dtype));
}

at::Tensor draw_one(const Case& c, const TensorSpec& spec, DType dtype, uint64_t seed,
                    at::Device device) {
  const ValueDraw& d = spec.values;
  const auto shape = concrete_shape(spec.shape, c);
  const auto type = to_scalar_type(dtype);
  const double extreme =
      d.extreme > 0 ? d.extreme : 0.5 * dtype_max(is_floating(dtype) ? dtype : DType::f32);
  const auto unit = [&] {  // U[0, 1) in float64
    return (make_values(Values::uniform, shape, DType::f64, seed, 0, device) + 9.0) / 18.0;
  };
  if (d.kind == "case") return make_values(c.values, shape, dtype, seed, extreme, device);
  if (d.kind == "norm")
    return make_norm_values(c.values, shape, dtype, seed, d.mean_to_spread, d.zero_constant,
                            device);
  if (d.kind == "normal") return make_normal(shape, dtype, seed, d.mean, d.std, device);
  if (d.kind == "uniform") return (d.low + (d.high - d.low) * unit()).to(type);
  if (d.kind == "positive")
    return (make_values(c.values, shape, DType::f64, seed, extreme, device).abs() + d.low).to(type);
  if (d.kind == "sorted")
    return std::get<0>(make_values(c.values, shape, DType::f64, seed, extreme, device).sort(-1))
        .to(type);
  if (d.kind == "simplex") {
    const auto z = make_values(Values::normal, shape, DType::f64, seed, 0, device);
    return (z.dim() == 0 ? at::ones_like(z) : at::softmax(z, -1)).to(type);
  }
  if (d.kind == "mask") return unit().lt(d.p).to(type);
  if (d.kind == "integers") return draw_integers(c, d, shape, seed, dtype).to(device);
  if (d.kind == "permutation") return draw_permutations(shape, seed, dtype).to(device);
  throw Error(ErrorKind::internal, "unknown value kind '" + d.kind + "'");
}

// How TorchScript spells a dtype, for messages.
std::string torch_dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kChar:
      return "torch.int8";
    case at::kByte:
      return "torch.uint8";
    case at::kBool:
      return "torch.bool";
    case at::kFloat8_e4m3fn:
      return "torch.float8_e4m3fn";
    case at::kInt:
      return "torch.int32";
    case at::kLong:
      return "torch.int64";
    case at::kHalf:
      return "torch.float16";
    case at::kBFloat16:
      return "torch.bfloat16";
    case at::kDouble:
      return "torch.float64";
    default:
      return "torch.float32";
  }
}

// A compiled op file: the compilation unit and, per function, how its parameters are filled.
struct Script {
  std::string op;
  std::string path;
  std::shared_ptr<torch::jit::CompilationUnit> unit;
  torch::jit::Function* reference = nullptr;
  torch::jit::Function* oracle = nullptr;
  torch::jit::Function* magnitude = nullptr;
  std::vector<std::string> input_names;
  std::vector<std::string> case_inputs;  // inputs in the case's dtype
  size_t outputs = 0;
  std::vector<std::string> output_names;
  std::vector<bool> output_integer;
  std::vector<std::string> output_dtype;  // "" : the case's dtype
  std::optional<size_t> case_input;       // the input whose dtype is the case's

  /// A parameter `NAME_dtype` of a tensor NAME: the tensor's dtype (TorchScript compiled from C++
  /// has no `torch.int8` names). For the oracle, floating outputs are float64.
  std::optional<at::ScalarType> tensor_dtype_parameter(const std::string& name, const Tensors& in,
                                                       bool oracle_run) const {
    const std::string suffix = "_dtype";
    if (name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      return std::nullopt;
    const std::string tensor = name.substr(0, name.size() - suffix.size());
    if (const auto it = std::find(input_names.begin(), input_names.end(), tensor);
        it != input_names.end())
      return in.at(static_cast<size_t>(it - input_names.begin())).scalar_type();
    const auto it = std::find(output_names.begin(), output_names.end(), tensor);
    if (it == output_names.end()) return std::nullopt;
    const size_t i = static_cast<size_t>(it - output_names.begin());
    if (oracle_run && !output_integer[i]) return at::kDouble;
    if (!output_dtype[i].empty()) return to_scalar_type(parse_dtype(output_dtype[i]));
    return case_input ? in.at(*case_input).scalar_type() : at::kFloat;
  }

  [[noreturn]] void reference_error(const std::string& fn, const std::string& what) const {
    throw ReferenceError("op '" + op + "' (" + path + "): " + fn + "() failed: " + what);
  }

  Tensors call(torch::jit::Function& fn, const Tensors& in, const Attributes& attrs,
               at::ScalarType compute, bool oracle_run) const {
    const auto& schema = fn.getSchema();
    torch::jit::Stack stack;
    for (const auto& arg : schema.arguments()) {
      const auto& name = arg.name();
      const auto it = std::find(input_names.begin(), input_names.end(), name);
      if (it != input_names.end()) {
        stack.emplace_back(in.at(static_cast<size_t>(it - input_names.begin())));
      } else if (name == "compute") {
        stack.emplace_back(compute);
      } else if (const auto dtype = tensor_dtype_parameter(name, in, oracle_run)) {
        stack.emplace_back(*dtype);
      } else {
        const double v = attrs.at(name);
        switch (arg.type()->kind()) {
          case c10::TypeKind::IntType:
            stack.emplace_back(static_cast<int64_t>(std::llround(v)));
            break;
          case c10::TypeKind::BoolType:
            stack.emplace_back(v != 0);
            break;
          default:
            stack.emplace_back(v);
            break;
        }
      }
    }
    c10::IValue result;
    try {
      result = fn(std::move(stack));
    } catch (const std::exception& e) {
      reference_error(fn.name(), e.what());
    }
    Tensors out;
    if (result.isTensor()) out.push_back(result.toTensor());
    else if (result.isTuple())
      for (const auto& v : result.toTupleRef().elements()) out.push_back(v.toTensor());
    else if (result.isTensorList())
      for (const auto& t : result.toTensorVector()) out.push_back(t);
    if (out.size() != outputs)
      reference_error(fn.name(), "returned " + std::to_string(out.size()) +
                                     " tensors; the op file declares " + std::to_string(outputs) +
                                     " outputs");
    // The eager reference returns each output in its declared dtype: the kernel's output is
    // compared with it bit for bit (ULP distance, unwritten one-byte elements).
    if (!oracle_run)
      for (size_t i = 0; i < out.size(); ++i) {
        const at::ScalarType want = !output_dtype[i].empty()
                                        ? to_scalar_type(parse_dtype(output_dtype[i]))
                                    : case_input ? in.at(*case_input).scalar_type()
                                                 : out[i].scalar_type();
        if (out[i].scalar_type() != want)
          reference_error(fn.name(), "returned output '" + output_names[i] + "' as " +
                                         std::string(c10::toString(out[i].scalar_type())) +
                                         "; the op file declares " +
                                         std::string(c10::toString(want)) + " (end with .to(" +
                                         output_names[i] + "_dtype), a parameter `" +
                                         output_names[i] + "_dtype: int` that kgate fills with " +
                                         torch_dtype_name(want) + ")");
      }
    if (oracle_run)
      for (size_t i = 0; i < out.size(); ++i)
        if (!output_integer[i] && out[i].scalar_type() != at::kDouble)
          reference_error(fn.name(),
                          "as the " +
                              std::string(fn.name() == "magnitude" ? "magnitude" : "oracle") +
                              " it returned output '" + output_names[i] + "' in " +
                              std::string(c10::toString(out[i].scalar_type())) +
                              ", not float64: the math runs in a fixed dtype (a .float()?), so "
                              "the oracle would be no more precise than that; compute in the "
                              "`compute` argument's dtype (x.to(compute))");
    return out;
  }
};

// Checks a compiled function's parameters and result type against the op file.
void check_function(const Script& s, const OpFile& file, torch::jit::Function& fn,
                    const std::string& field) {
  const auto& schema = fn.getSchema();
  const OpSignature& op = file.signature;
  auto fail = [&](const std::string& what) {
    throw Error(ErrorKind::usage, file.path + ": " + field + ": " + what);
  };
  std::vector<std::string> seen;
  for (const auto& arg : schema.arguments()) {
    const auto& name = arg.name();
    seen.push_back(name);
    const auto kind = arg.type()->kind();
    if (std::find(s.input_names.begin(), s.input_names.end(), name) != s.input_names.end()) {
      if (kind != c10::TypeKind::TensorType)
        fail("parameter '" + name + "' is an input of the op: annotate it `" + name + ": Tensor`");
    } else if (name == "compute") {
      if (kind != c10::TypeKind::IntType)
        fail(
            "parameter 'compute' is the compute dtype: annotate it `compute: int` (a torch.dtype)");
    } else if (name.size() > 6 && name.compare(name.size() - 6, 6, "_dtype") == 0 && [&] {
                 const std::string t = name.substr(0, name.size() - 6);
                 return std::find(s.input_names.begin(), s.input_names.end(), t) !=
                            s.input_names.end() ||
                        std::find(s.output_names.begin(), s.output_names.end(), t) !=
                            s.output_names.end();
               }()) {
      if (kind != c10::TypeKind::IntType)
        fail("parameter '" + name + "' is a tensor's dtype: annotate it `" + name +
             ": int` (a torch.dtype)");
    } else if (op.attributes.count(name) || op.symbol(name)) {
      if (kind != c10::TypeKind::IntType && kind != c10::TypeKind::FloatType &&
          kind != c10::TypeKind::BoolType)
        fail("parameter '" + name +
             "' is an attribute or a shape symbol: annotate it int, float or bool");
    } else {
      std::string known;
      for (const auto& n : s.input_names) known += (known.empty() ? "" : ", ") + n;
      for (const auto& [n, v] : op.attributes) known += ", " + n;
      for (const auto& d : op.symbols) known += ", " + d.name;
      fail("parameter '" + name +
           "' is neither an input, an attribute, a shape symbol, 'compute' nor a tensor's "
           "'NAME_dtype' (known: " +
           known + ", compute)");
    }
  }
  for (const auto& n : s.input_names)
    if (std::find(seen.begin(), seen.end(), n) == seen.end())
      fail("input '" + n + "' is not a parameter of " + fn.name() + "(); every input must be");
  if (schema.returns().size() != 1)
    fail(fn.name() + "() must return a Tensor, a Tuple of Tensors or a List[Tensor]");
  const auto& ret = schema.returns()[0].type();
  bool ok = ret->kind() == c10::TypeKind::TensorType;
  if (ret->kind() == c10::TypeKind::TupleType) {
    ok = true;
    const auto elems = ret->containedTypes();
    for (const auto& e : elems) ok &= e->kind() == c10::TypeKind::TensorType;
    if (ok && elems.size() != s.outputs)
      fail(fn.name() + "() returns " + std::to_string(elems.size()) +
           " tensors; the op file declares " + std::to_string(s.outputs) + " outputs");
  }
  if (ret->kind() == c10::TypeKind::ListType)
    ok = ret->containedTypes().at(0)->kind() == c10::TypeKind::TensorType;
  if (!ok)
    fail(fn.name() + "() returns " + ret->str() +
         "; expected a Tensor, a Tuple of Tensors or a List[Tensor]");
}

}  // namespace

Tensors draw_inputs(const Case& c, const OpSignature& op, at::Device device) {
  Tensors out;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const auto& spec = op.inputs[i];
    const std::string& from = spec.values.seed_from;
    const uint64_t seed = from.empty()     ? (i == 0 ? c.seed : derive_seed(c.seed, spec.name, 0))
                          : from == "case" ? c.seed
                                           : derive_seed(c.seed, from, 0);
    out.push_back(apply_layout(draw_one(c, spec, op.tensor_dtype(spec, c.dtype), seed, device),
                               c.layout, device));
  }
  return out;
}

OpReference script_reference(const OpFile& file) {
  auto s = std::make_shared<Script>();
  const OpSignature& op = file.signature;
  s->op = op.name;
  s->path = file.path;
  for (const auto& t : op.inputs) s->input_names.push_back(t.name);
  s->outputs = op.outputs.size();
  for (const auto& t : op.outputs) {
    s->output_names.push_back(t.name);
    s->output_integer.push_back(!t.dtype.empty() && !is_floating(parse_dtype(t.dtype)));
    s->output_dtype.push_back(t.dtype);
  }
  // torch.nn.functional calls, as references are written, become their ATen ops where the table of
  // tested equivalents allows (core/functional_names.hpp); another is refused by name and line.
  std::vector<std::string> functional_problems;
  const std::string source =
      rewrite_functional_calls(file.reference + (file.oracle.empty() ? "" : "\n" + file.oracle) +
                                   (file.magnitude.empty() ? "" : "\n" + file.magnitude),
                               &functional_problems);
  if (!functional_problems.empty()) {
    std::string text = file.path + ": reference: ";
    for (size_t i = 0; i < functional_problems.size(); ++i)
      text +=
          (i ? "; " : "") + functional_problems[i] + " (of the reference source" +
          (file.oracle.empty() && file.magnitude.empty() ? ")"
                                                         : ", then the oracle's and magnitude's)");
    throw Error(ErrorKind::usage, text);
  }
  // The graph executor would profile a reference's first runs and then fuse its elementwise ops
  // (with fused multiply-adds on a GPU), so one case's reference values would change with how
  // many cases ran before it. References run as written, every time: a case id replays bitwise.
  torch::jit::setGraphExecutorOptimize(false);
  try {
    s->unit = torch::jit::compile(source);
  } catch (const std::exception& e) {
    // TorchScript names the source "<string>": say which source its line numbers count in.
    std::string what = e.what();
    const std::string generic = "File \"<string>\"";
    for (size_t at; (at = what.find(generic)) != std::string::npos;)
      what.replace(at, generic.size(),
                   std::string("reference source") + (file.oracle.empty() ? "" : " (then oracle)") +
                       (file.magnitude.empty() ? "" : " (then conditioning.magnitude)"));
    throw Error(ErrorKind::usage,
                file.path + ": reference: TorchScript does not compile it:\n" + what);
  }
  auto find = [&](const std::string& name) -> torch::jit::Function* {
    return s->unit->find_function(c10::QualifiedName(name));
  };
  s->reference = find("reference");
  if (!s->reference)
    throw Error(ErrorKind::usage,
                file.path + ": reference: the source defines no function `reference`");
  check_function(*s, file, *s->reference, "reference");
  if (!file.oracle.empty()) {
    s->oracle = find("oracle");
    if (!s->oracle)
      throw Error(ErrorKind::usage,
                  file.path + ": oracle: the source defines no function `oracle`");
    check_function(*s, file, *s->oracle, "oracle");
  }
  if (!file.magnitude.empty()) {
    s->magnitude = find("magnitude");
    if (!s->magnitude)
      throw Error(
          ErrorKind::usage,
          file.path + ": conditioning.magnitude: the source defines no function `magnitude`");
    check_function(*s, file, *s->magnitude, "conditioning.magnitude");
  }
  for (auto* fn : s->unit->get_functions()) {
    if (const auto bad = forbidden_in(torch::jit::toGraphFunction(*fn).graph()->block());
        !bad.empty())
      throw Error(ErrorKind::usage,
                  file.path + ": reference: function " + fn->name() + "() calls " + bad +
                      ", which a reference may not call (it reaches files, memory shared "
                      "with other processes, or ops of a custom namespace)");
  }

  // The case's dtype is the first input declared in it; its opmath type is eager's compute dtype.
  std::optional<size_t> case_input;
  for (size_t i = 0; i < op.inputs.size() && !case_input; ++i)
    if (op.inputs[i].dtype.empty()) case_input = i;
  s->case_input = case_input;

  OpReference r;
  r.make_inputs = [](const Case& c, const OpSignature& sig, at::Device device) {
    return draw_inputs(c, sig, device);
  };
  r.eager = [s, case_input](const Tensors& in, const Attributes& a) {
    const at::ScalarType compute =
        case_input ? opmath(in.at(*case_input).scalar_type()) : at::kFloat;
    return s->call(*s->reference, in, a, compute, false);
  };
  r.oracle = [s](const Tensors& in, const Attributes& a) {
    return s->call(s->oracle ? *s->oracle : *s->reference, in, a, at::kDouble, true);
  };
  if (s->magnitude)
    r.magnitude = [s](const Tensors& in, const Attributes& a) {
      return s->call(*s->magnitude, in, a, at::kDouble, true);
    };
  return r;
}

}  // namespace kgate
