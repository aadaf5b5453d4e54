// The binding of a torch op's schema onto a kgate op (torch_op_plan.hpp) and the boxed call.
#include "runtime/torch_op_plan.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/error.hpp"
#include "core/safe_text.hpp"
#include "references/op_reference.hpp"

namespace kgate::torch_op {
namespace {

using package::Expr;

bool is_write(const c10::Argument& a) { return a.alias_info() && a.alias_info()->isWrite(); }

bool is_integer(c10::TypeKind k) {
  return k == c10::TypeKind::IntType || k == c10::TypeKind::SymIntType;
}
bool is_scalar(c10::TypeKind k) {
  return is_integer(k) || k == c10::TypeKind::FloatType || k == c10::TypeKind::BoolType ||
         k == c10::TypeKind::NumberType || k == c10::TypeKind::SymFloatType;
}

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// "[a;b]" -> {"a", "b"}; nullopt when `t` is not a list.
std::optional<std::vector<std::string>> list_items(const std::string& t) {
  if (t.size() < 2 || t.front() != '[' || t.back() != ']') return std::nullopt;
  std::vector<std::string> items;
  const std::string inner = trimmed(t.substr(1, t.size() - 2));
  if (inner.empty()) return items;
  for (size_t start = 0;;) {
    const size_t semi = inner.find(';', start);
    items.push_back(trimmed(inner.substr(start, semi == std::string::npos ? semi : semi - start)));
    if (semi == std::string::npos) break;
    start = semi + 1;
  }
  return items;
}

std::optional<std::string> quoted(const std::string& t) {
  if (t.size() >= 2 && (t.front() == '\'' || t.front() == '"') && t.back() == t.front())
    return t.substr(1, t.size() - 2);
  return std::nullopt;
}

std::optional<double> number(const std::string& t) {
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<bool> boolean(const std::string& t) {
  if (t == "true" || t == "True") return true;
  if (t == "false" || t == "False") return false;
  return std::nullopt;
}

std::optional<DType> dtype_named(std::string t) {
  if (t.rfind("torch.", 0) == 0) t = t.substr(6);
  try {
    return parse_dtype(t);
  } catch (const Error&) {
    return std::nullopt;
  }
}

int find_name(const std::vector<TensorSpec>& v, const std::string& n) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i].name == n) return static_cast<int>(i);
  return -1;
}

// Builds the plan: the state shared by the argument binders below.
class Planner {
 public:
  Planner(const TorchOpSpec& spec, const OpSignature& op, c10::OperatorHandle handle)
      : op_(op), plan_{std::move(handle)} {
    where_ = "--torch-op " + spec.text + " (" + schema_text(plan_.handle.schema()) + ")";
    mapping_.insert(spec.mapping.begin(), spec.mapping.end());
    for (const auto& s : op.symbols) symbol_names_.insert(s.name);
    for (const auto& [n, v] : op.attributes) symbol_names_.insert(n);
    input_bound_.assign(op.inputs.size(), false);
    output_written_.assign(op.outputs.size(), false);
  }

  Plan run() {
    const c10::FunctionSchema& schema = plan_.handle.schema();
    for (const auto& [from, to] : mapping_) {
      bool found = false;
      for (const auto& a : schema.arguments()) found |= a.name() == from;
      if (!found)
        throw_usage(where_ + ": the mapping names '" + from +
                    "', which is no argument of the schema");
    }
    for (const auto& a : schema.arguments()) plan_.arguments.push_back(bind(a));
    assign_written_outputs();
    for (size_t k = 0; k < op_.inputs.size(); ++k)
      if (!input_bound_[k])
        throw_usage(where_ + ": op " + op_.name + "'s input '" + op_.inputs[k].name +
                    "' is passed by no argument; map one onto it with ,ARG=" + op_.inputs[k].name);
    bind_returns();
    return std::move(plan_);
  }

 private:
  // ---- arguments -------------------------------------------------------------------------------
  Binding bind(const c10::Argument& a) {
    c10::TypePtr type = a.real_type();  // ScalarType and SymInt, where type() says int
    const bool optional = type->kind() == c10::TypeKind::OptionalType;
    if (optional) type = type->expectRef<c10::OptionalType>().getElementType();
    const bool mapped = mapping_.count(a.name()) > 0;
    const std::string target = mapped ? mapping_.at(a.name()) : a.name();
    Binding b;
    b.type = type->kind();
    if (mapped && target == "None") {
      const bool defaults_to_none = a.default_value() && a.default_value()->isNone();
      if (!optional && !defaults_to_none)
        throw_usage(where_ + ": argument '" + a.name() + "' is a " + a.real_type()->str() +
                    ", not optional: it cannot be None");
      b.kind = Binding::none;
      return b;
    }
    if (b.type == c10::TypeKind::TensorType) return bind_tensor(a, b, target, mapped, optional);
    if (find_name(op_.inputs, target) >= 0 && b.type != c10::TypeKind::ListType)
      throw_usage(where_ + ": argument '" + a.name() + "' maps onto input tensor '" + target +
                  "' but is not a Tensor");
    if (b.type == c10::TypeKind::ListType) {
      const auto element = type->containedType(0);
      const c10::TypeKind ek = element->kind() == c10::TypeKind::OptionalType
                                   ? element->containedType(0)->kind()
                                   : element->kind();
      if (ek == c10::TypeKind::TensorType || is_integer(ek)) {
        if (const auto items = list_items(target))
          return ek == c10::TypeKind::TensorType ? bind_tensor_list(a, b, *items)
                                                 : bind_integer_list(a, b, *items);
        if (mapped)
          throw_usage(where_ + ": argument '" + a.name() + "' is a " + a.real_type()->str() +
                      "; bind it to a list: " + suggestion(a, ek, true));
      }
      return unbound(a, b, optional);
    }
    if (op_.attributes.count(target)) {
      if (!is_scalar(b.type))
        throw_usage(where_ + ": argument '" + a.name() + "' maps onto attribute '" + target +
                    "' but its type is " + a.real_type()->str() +
                    " (float, int, bool or Scalar expected)");
      b.kind = Binding::attribute;
      b.name = target;
      return b;
    }
    if (mapped) return bind_constant(a, b, target);
    if (is_integer(b.type) && symbol_names_.count(a.name())) return bind_integer(a, b, a.name());
    return unbound(a, b, optional);
  }

  Binding bind_tensor(const c10::Argument& a, Binding b, const std::string& target, bool mapped,
                      bool optional) {
    if (const int k = find_name(op_.inputs, target); k >= 0) {
      int aliased_output = -1;
      for (size_t o = 0; o < op_.outputs.size(); ++o)
        if (op_.alias_input(op_.outputs[o]) == k) aliased_output = static_cast<int>(o);
      if (is_write(a) && aliased_output < 0)
        throw_usage(where_ + ": argument '" + a.name() + "' is written (Tensor(a!)) but op " +
                    op_.name + "'s input '" + target +
                    "' is read only; an op that writes an input declares an output with "
                    "\"alias\": \"" +
                    target + "\"");
      if (!is_write(a) && aliased_output >= 0)
        throw_usage(where_ + ": op " + op_.name + " writes input '" + target +
                    "' in place (output '" + op_.outputs[static_cast<size_t>(aliased_output)].name +
                    "'), but argument '" + a.name() +
                    "' is not written (declare it Tensor(a!) in the schema)");
      if (aliased_output >= 0) output_written_[static_cast<size_t>(aliased_output)] = true;
      b.kind = Binding::input;
      b.index = static_cast<size_t>(k);
      input_bound_[static_cast<size_t>(k)] = true;
      return b;
    }
    if (const int o = find_name(op_.outputs, target); o >= 0) {
      if (!is_write(a))
        throw_usage(where_ + ": argument '" + a.name() + "' maps onto output '" + target +
                    "' but is not a written tensor (Tensor(a!), as out= arguments are)");
      b.kind = Binding::output;
      b.index = static_cast<size_t>(o);
      output_written_[static_cast<size_t>(o)] = true;
      return b;
    }
    if (op_.attributes.count(target))
      throw_usage(where_ + ": argument '" + a.name() + "' maps onto attribute '" + target +
                  "' but its type is " + a.real_type()->str() +
                  " (float, int, bool or Scalar expected)");
    if (mapped)
      throw_usage(where_ + ": argument '" + a.name() + "' maps onto '" + target +
                  "', which is no tensor of op " + op_.name + "; " + suggestion(a, b.type, false));
    if (is_write(a) && !optional) {
      b.kind = Binding::output;  // an out= argument of another name: the next output left
      b.index = SIZE_MAX;
      return b;
    }
    return unbound(a, b, optional);
  }

  Binding bind_tensor_list(const c10::Argument& a, Binding b,
                           const std::vector<std::string>& items) {
    if (is_write(a))
      throw_usage(where_ + ": argument '" + a.name() +
                  "' is a written Tensor[]; kgate binds a Tensor[] to op inputs only");
    for (const auto& item : items) {
      const int k = find_name(op_.inputs, item);
      if (k < 0)
        throw_usage(where_ + ": argument '" + a.name() + "' lists '" + item +
                    "', which is no input of op " + op_.name + " (inputs: " + names(op_.inputs) +
                    ")");
      for (const auto& o : op_.outputs)
        if (op_.alias_input(o) == k)
          throw_usage(where_ + ": argument '" + a.name() + "' lists '" + item + "', which op " +
                      op_.name + " writes in place; a Tensor[] is read only");
      b.indices.push_back(static_cast<size_t>(k));
      input_bound_[static_cast<size_t>(k)] = true;
    }
    b.kind = Binding::tensor_list;
    return b;
  }

  Expr integer_expr(const c10::Argument& a, const std::string& text) {
    Expr e;
    try {
      e = Expr::parse(text);
      e.check_symbols(symbol_names_);
    } catch (const Error& error) {
      throw_usage(where_ + ": argument '" + a.name() + "' = '" + text +
                  "' is not an integer expression of op " + op_.name +
                  "'s shape symbols and integer attributes: " + error.what() + "; " +
                  suggestion(a, c10::TypeKind::IntType, false));
    }
    for (const auto& s : e.symbols()) add_symbol_source(a, s);
    return e;
  }

  Binding bind_integer(const c10::Argument& a, Binding b, const std::string& text) {
    b.kind = Binding::integer;
    b.exprs.push_back(integer_expr(a, text));
    return b;
  }

  Binding bind_integer_list(const c10::Argument& a, Binding b,
                            const std::vector<std::string>& items) {
    b.kind = Binding::integer_list;
    for (const auto& item : items) b.exprs.push_back(integer_expr(a, item));
    return b;
  }

  Binding bind_constant(const c10::Argument& a, Binding b, const std::string& target) {
    const auto bad = [&](const std::string& why) {
      throw_usage(where_ + ": argument '" + a.name() + "' (" + a.real_type()->str() + ") = '" +
                  target + "': " + why + "; " + suggestion(a, b.type, false));
    };
    switch (b.type) {
      case c10::TypeKind::IntType:
      case c10::TypeKind::SymIntType:
        return bind_integer(a, b, target);
      case c10::TypeKind::FloatType:
      case c10::TypeKind::SymFloatType:
      case c10::TypeKind::NumberType:
        if (const auto v = number(target)) {
          b.kind = Binding::number;
          b.value = *v;
          return b;
        }
        return bind_integer(a, b, target);
      case c10::TypeKind::BoolType:
        if (const auto v = boolean(target)) {
          b.kind = Binding::boolean;
          b.value = *v ? 1 : 0;
          return b;
        }
        bad("not an attribute of op " + op_.name + ", nor true or false");
        break;
      case c10::TypeKind::StringType:
        if (const auto v = quoted(target)) {
          b.kind = Binding::text;
          b.name = *v;
          return b;
        }
        bad("a str is bound to a quoted constant");
        break;
      case c10::TypeKind::ScalarTypeType:
        if (target.rfind("dtype(", 0) == 0 && target.back() == ')') {
          const std::string t = trimmed(target.substr(6, target.size() - 7));
          b.kind = Binding::scalar_type;
          b.name = t;
          if (const int i = find_name(op_.inputs, t); i >= 0) {
            b.index = static_cast<size_t>(i);
            return b;
          }
          if (const int o = find_name(op_.outputs, t); o >= 0) {
            b.index = static_cast<size_t>(o);
            b.value = 1;  // of an output
            return b;
          }
          bad("'" + t + "' is no tensor of op " + op_.name);
        }
        if (const auto d = dtype_named(target)) {
          b.kind = Binding::scalar_type;
          b.dtype = *d;
          return b;
        }
        bad("neither dtype(TENSOR) nor a dtype's name");
        break;
      default:
        bad("kgate binds a " + a.real_type()->str() +
            " argument only to its schema default or None");
    }
    return b;
  }

  // An argument no name binds: a schema default, None when optional, else an error.
  Binding unbound(const c10::Argument& a, Binding b, bool optional) {
    if (a.default_value()) {
      b.kind = Binding::schema_default;
      return b;
    }
    if (optional) {
      b.kind = Binding::none;
      plan_.implicit.push_back(a.name() + "=None");
      return b;
    }
    if (b.type == c10::TypeKind::TensorType)
      throw_usage(where_ + ": argument '" + a.name() + "' maps onto nothing of op " + op_.name +
                  " (inputs: " + names(op_.inputs) + "; outputs: " + names(op_.outputs) +
                  "; attributes: " + attribute_names() + "); map it with ," + a.name() + "=NAME");
    throw_usage(where_ + ": argument '" + a.name() + "' (" + a.real_type()->str() +
                ") maps onto nothing of op " + op_.name + "; " +
                suggestion(a, b.type, b.type == c10::TypeKind::ListType));
  }

  // ---- outputs ---------------------------------------------------------------------------------
  // Written arguments that match no name by name ("out") take the outputs no argument wrote.
  void assign_written_outputs() {
    const auto& schema = plan_.handle.schema();
    for (size_t i = 0; i < plan_.arguments.size(); ++i) {
      Binding& b = plan_.arguments[i];
      if (b.kind != Binding::output || b.index != SIZE_MAX) continue;
      size_t o = 0;
      while (o < op_.outputs.size() && (output_written_[o] || op_.alias_input(op_.outputs[o]) >= 0))
        ++o;
      if (o == op_.outputs.size())
        throw_usage(where_ + ": written argument '" + schema.arguments()[i].name() +
                    "' has no output of op " + op_.name + " left to write; map it with ," +
                    schema.arguments()[i].name() + "=NAME");
      b.index = o;
      output_written_[o] = true;
    }
  }

  // The outputs not written through arguments come from the returns, in order; a return that
  // aliases a written argument (-> Tensor(a!)) is that argument; a Tensor[] return fills every
  // output left; a value that is not a tensor (a count, a flag) is not judged.
  void bind_returns() {
    std::vector<size_t> remaining;
    for (size_t o = 0; o < op_.outputs.size(); ++o)
      if (!output_written_[o]) remaining.push_back(o);
    size_t next = 0;
    const auto& returns = plan_.handle.schema().returns();
    for (size_t r = 0; r < returns.size(); ++r) {
      const auto& ret = returns[r];
      c10::TypePtr type = ret.real_type();
      if (type->kind() == c10::TypeKind::OptionalType)
        type = type->expectRef<c10::OptionalType>().getElementType();
      if ((ret.alias_info() && ret.alias_info()->isWrite()) ||
          (type->kind() != c10::TypeKind::TensorType && type->kind() != c10::TypeKind::ListType) ||
          (type->kind() == c10::TypeKind::ListType &&
           type->containedType(0)->kind() != c10::TypeKind::TensorType)) {
        plan_.returned_output.push_back(-1);
        continue;
      }
      if (type->kind() == c10::TypeKind::ListType) {
        if (plan_.list_return >= 0)
          throw_usage(where_ + ": the op returns two Tensor[]; kgate fills op " + op_.name +
                      "'s outputs from one");
        plan_.list_return = static_cast<int>(r);
        plan_.list_outputs.assign(remaining.begin() + static_cast<std::ptrdiff_t>(next),
                                  remaining.end());
        next = remaining.size();
        plan_.returned_output.push_back(-1);
        plan_.every_output_in_kgate_buffers = false;
        continue;
      }
      if (next >= remaining.size())
        throw_usage(where_ + ": the op returns more new tensors than op " + op_.name +
                    " has outputs left to fill (" + std::to_string(remaining.size()) + ")");
      plan_.returned_output.push_back(static_cast<int>(remaining[next++]));
      plan_.every_output_in_kgate_buffers = false;
    }
    if (next < remaining.size())
      throw_usage(where_ + ": op " + op_.name + "'s output '" + op_.outputs[remaining[next]].name +
                  "' is neither written through an argument (Tensor(a!)) nor returned");
  }

  // ---- symbols and messages --------------------------------------------------------------------
  void add_symbol_source(const c10::Argument& a, const std::string& symbol) {
    if (op_.attributes.count(symbol)) return;  // read from the call's attributes
    for (const auto& s : plan_.symbols)
      if (s.symbol == symbol) return;
    for (const bool output : {false, true}) {
      const auto& tensors = output ? op_.outputs : op_.inputs;
      for (size_t t = 0; t < tensors.size(); ++t)
        for (size_t d = 0; d < tensors[t].shape.size(); ++d)
          if (tensors[t].shape[d] == symbol) {
            plan_.symbols.push_back({symbol, output, t, d});
            return;
          }
    }
    throw_usage(where_ + ": argument '" + a.name() + "' names shape symbol " + symbol +
                ", which is no dimension of its own in any tensor of op " + op_.name +
                " (only a dimension spelled as the bare symbol gives its value)");
  }

  std::string names(const std::vector<TensorSpec>& tensors) const {
    std::vector<std::string> v;
    for (const auto& t : tensors) v.push_back(t.name);
    return listed(v);
  }
  std::string attribute_names() const {
    std::vector<std::string> v;
    for (const auto& [n, value] : op_.attributes) v.push_back(n);
    return listed(v);
  }
  std::string symbol_list() const {
    std::vector<std::string> v;
    for (const auto& s : op_.symbols) v.push_back(s.name);
    return listed(v);
  }

  // The mapping that would bind argument `a` of type kind `k` (a list of them when `list`).
  std::string suggestion(const c10::Argument& a, c10::TypeKind k, bool list) const {
    const std::string n = a.name();
    const std::string none = a.real_type()->kind() == c10::TypeKind::OptionalType
                                 ? " (or ," + n + "=None to pass None)"
                                 : "";
    if (list && k == c10::TypeKind::TensorType)
      return "map it with ," + n + "=[NAME;NAME...] naming op inputs (" + names(op_.inputs) + ")" +
             none;
    if (list || k == c10::TypeKind::ListType)
      return "bind it with ," + n + "=[EXPR;EXPR...], integer expressions of op " + op_.name +
             "'s shape symbols (" + symbol_list() + ") or constants" + none;
    switch (k) {
      case c10::TypeKind::TensorType:
        return "map it with ," + n + "=NAME (inputs: " + names(op_.inputs) +
               "; outputs: " + names(op_.outputs) + ")" + none;
      case c10::TypeKind::IntType:
      case c10::TypeKind::SymIntType:
        return "bind it with ," + n + "=EXPR, a shape symbol of op " + op_.name + " (" +
               symbol_list() + "), an integer expression of them (e.g. ," + n + "=2*" +
               (op_.symbols.empty() ? std::string("N") : op_.symbols.back().name) +
               ") or a constant" + none;
      case c10::TypeKind::FloatType:
      case c10::TypeKind::NumberType:
        return "bind it with ," + n + "=NAME of an attribute (" + attribute_names() +
               ") or a number" + none;
      case c10::TypeKind::BoolType:
        return "bind it with ," + n + "=true or ," + n + "=false" + none;
      case c10::TypeKind::StringType:
        return "bind it with ," + n + "='text'" + none;
      case c10::TypeKind::ScalarTypeType:
        return "bind it with ," + n + "=dtype(NAME) (the dtype of an op tensor in the case) or ," +
               n + "=float16" + none;
      default:
        return "give it a schema default" + none;
    }
  }

  const OpSignature& op_;
  Plan plan_;
  std::string where_;
  std::map<std::string, std::string> mapping_;
  std::set<std::string, std::less<>> symbol_names_;
  std::vector<bool> input_bound_, output_written_;
};

at::Tensor as_tensor(const TensorView& v, const at::Device& device) {
  // An empty tensor may have no storage at all (a null pointer), which from_blob cannot place.
  if (v.numel() == 0 || v.data == nullptr)
    return at::empty(v.sizes, at::TensorOptions().dtype(to_scalar_type(v.dtype)).device(device));
  return at::from_blob(v.data, v.sizes, v.strides,
                       at::TensorOptions().dtype(to_scalar_type(v.dtype)).device(device));
}

c10::IValue attribute_value(c10::TypeKind kind, double value) {
  switch (kind) {
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType:
      return c10::IValue(static_cast<int64_t>(std::llround(value)));
    case c10::TypeKind::BoolType:
      return c10::IValue(value != 0);
    default:
      return c10::IValue(value);
  }
}

package::SymbolValues symbol_values_of(const Plan& plan, const KernelCall& kc) {
  package::SymbolValues values;
  for (const auto& [name, v] : kc.attributes) values[name] = std::llround(v);
  for (const auto& s : plan.symbols) {
    const auto& views = s.output ? kc.outputs : kc.inputs;
    if (s.tensor < views.size() && s.dim < views[s.tensor].sizes.size())
      values[s.symbol] = views[s.tensor].sizes[s.dim];
  }
  return values;
}

}  // namespace

std::string listed(const std::vector<std::string>& names) {
  return names.empty() ? "(none)" : join(names);
}

std::string schema_text(const c10::FunctionSchema& s) {
  std::ostringstream os;
  os << s;
  // A schema's `Tensor! out` has an alias set torch names itself ("$0"), which it prints as
  // `Tensor($0! -> )`: written as the library wrote it.
  static const std::regex generated(R"(\(\$[0-9]+(!?)(?: -> [^)]*)?\))");
  return std::regex_replace(os.str(), generated, "$1");
}

Plan plan_for(const TorchOpSpec& spec, const OpSignature& op) {
  const auto handle = c10::Dispatcher::singleton().findSchema({spec.schema_name, spec.overload});
  if (!handle) {
    std::vector<std::string> known;
    const std::string ns = spec.schema_name.substr(0, spec.schema_name.find("::") + 2);
    for (const auto& name : c10::Dispatcher::singleton().getAllOpNames())
      if (name.name.rfind(ns, 0) == 0)
        known.push_back(name.name + (name.overload_name.empty() ? "" : "." + name.overload_name));
    std::sort(known.begin(), known.end());
    throw_usage("--torch-op " + spec.text + ": no op " + spec.schema_name +
                (spec.overload.empty() ? "" : "." + spec.overload) + " is registered; ops of " +
                ns + "*: " + listed(known) + " (is its library given with --torch-library?)");
  }
  return Planner(spec, op, *handle).run();
}

void call_op(const Plan& plan, Backend backend, const KernelCall& kc) {
  const at::Device device = backend == Backend::cuda
                                ? at::Device(at::kCUDA, c10::cuda::current_device())
                                : at::Device(at::kCPU);
  std::optional<c10::cuda::CUDAStreamGuard> stream_guard;
  if (backend == Backend::cuda)
    stream_guard.emplace(
        c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(kc.stream), device.index()));
  const auto& schema = plan.handle.schema();
  std::vector<at::Tensor> outputs;
  for (const auto& o : kc.outputs) outputs.push_back(as_tensor(o, device));
  std::optional<package::SymbolValues> values;
  const auto evaluate = [&](const package::Expr& e) {
    if (!values) values = symbol_values_of(plan, kc);
    return e.evaluate(*values);
  };
  torch::jit::Stack stack;
  for (size_t i = 0; i < plan.arguments.size(); ++i) {
    const Binding& b = plan.arguments[i];
    switch (b.kind) {
      case Binding::input:
        stack.emplace_back(as_tensor(kc.inputs.at(b.index), device));
        break;
      case Binding::output:
        stack.emplace_back(outputs.at(b.index));
        break;
      case Binding::attribute:
        stack.emplace_back(attribute_value(b.type, kc.attributes.at(b.name)));
        break;
      case Binding::schema_default:
        stack.push_back(*schema.arguments()[i].default_value());
        break;
      case Binding::none:
        stack.emplace_back();
        break;
      case Binding::tensor_list: {
        c10::List<at::Tensor> list;
        for (const size_t k : b.indices) list.push_back(as_tensor(kc.inputs.at(k), device));
        stack.emplace_back(std::move(list));
        break;
      }
      case Binding::integer:
        if (is_integer(b.type)) stack.emplace_back(evaluate(b.exprs[0]));
        else stack.emplace_back(static_cast<double>(evaluate(b.exprs[0])));
        break;
      case Binding::integer_list: {
        std::vector<int64_t> list;
        for (const auto& e : b.exprs) list.push_back(evaluate(e));
        stack.emplace_back(std::move(list));
        break;
      }
      case Binding::number:
        stack.emplace_back(b.value);
        break;
      case Binding::boolean:
        stack.emplace_back(b.value != 0);
        break;
      case Binding::text:
        stack.emplace_back(b.name);
        break;
      case Binding::scalar_type: {
        const DType d =
            b.dtype ? *b.dtype : (b.value != 0 ? kc.outputs : kc.inputs).at(b.index).dtype;
        stack.emplace_back(to_scalar_type(d));
        break;
      }
    }
  }
  try {
    plan.handle.callBoxed(&stack);
  } catch (const c10::Error& e) {
    // The op's own error (a TORCH_CHECK), without the C++ backtrace torch appends.
    throw std::runtime_error(schema.name() + " raised: " + e.what_without_backtrace());
  }
  const auto fill = [&](const at::Tensor& got, size_t o, const std::string& what) {
    at::Tensor& dst = outputs.at(o);
    if (!got.defined()) throw Error(ErrorKind::usage, schema.name() + " returned None for " + what);
    if (got.scalar_type() != dst.scalar_type())
      throw std::runtime_error(schema.name() + " returned a tensor of dtype " +
                               std::string(c10::toString(got.scalar_type())) + " for " + what +
                               ", expected " + std::string(c10::toString(dst.scalar_type())));
    if (!got.sizes().equals(dst.sizes()))
      throw Error(ErrorKind::usage, schema.name() + " returned a tensor of shape " +
                                        c10::str(got.sizes()) + " for " + what + ", expected " +
                                        c10::str(dst.sizes()));
    dst.copy_(got);
  };
  for (size_t r = 0; r < plan.returned_output.size() && r < stack.size(); ++r) {
    if (static_cast<int>(r) == plan.list_return) {
      const auto list = stack[r].toTensorList();
      if (list.size() != plan.list_outputs.size())
        throw Error(ErrorKind::usage, schema.name() + " returned " + std::to_string(list.size()) +
                                          " tensors in its Tensor[] for " +
                                          std::to_string(plan.list_outputs.size()) + " outputs");
      for (size_t j = 0; j < list.size(); ++j)
        fill(list.get(j), plan.list_outputs[j], "output " + std::to_string(plan.list_outputs[j]));
      continue;
    }
    const int o = plan.returned_output[r];
    if (o < 0) continue;
    fill(stack[r].isNone() ? at::Tensor() : stack[r].toTensor(), static_cast<size_t>(o),
         "output " + std::to_string(o));
  }
}

}  // namespace kgate::torch_op
