// How a torch op's schema is fed from a case (internal to runtime/torch_op*): one binding per
// schema argument, made once when the op is registered, then turned into a boxed call per launch.
//
// A mapping's target (SCHEMA_ARG=TARGET in a --torch-op spec) is one of
//   NAME          an op input, output or attribute; for an int / SymInt argument also a shape
//                 symbol (head_size=D)
//   EXPR          an integer expression of the shape symbols and integer attributes (rot_dim=2*D2),
//                 or a constant (block=128): int, SymInt, float and Scalar arguments
//   [A;B;...]     a list: op inputs for Tensor[], integer expressions for int[] / SymInt[]
//                 (normalized_shape=[N])
//   None          an optional argument (Tensor?, int?, ...) passed as None
//   true, false   a bool argument
//   'text'        a str argument ("text" too)
//   dtype(NAME)   a ScalarType argument: the dtype of op tensor NAME in the case; or a dtype's name
//                 (float16, f16, torch.float16)
// Unmapped arguments bind by name (an op tensor or attribute, or a shape symbol of that name);
// then a written tensor takes the next output no argument writes, an argument with a schema
// default takes it, and an optional one is None. Anything else is an error that names the
// argument and shows the mapping that would bind it.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <string>
#include <vector>

#include "core/expr.hpp"
#include "core/op_signature.hpp"
#include "runtime/kernel.hpp"
#include "runtime/torch_op.hpp"

namespace kgate::torch_op {

/// How one schema argument is fed.
struct Binding {
  enum Kind {
    input,           ///< op input `index`
    output,          ///< op output `index` (SIZE_MAX while not yet assigned)
    attribute,       ///< op attribute `name`, converted to the argument's type
    schema_default,  ///< the schema's default value
    none,            ///< None (an optional argument)
    tensor_list,     ///< Tensor[]: op inputs `indices`
    integer,         ///< int / SymInt (or float / Scalar): `exprs[0]` over the case's symbols
    integer_list,    ///< int[] / SymInt[]: `exprs`
    number,          ///< float / Scalar constant `value`
    boolean,         ///< bool constant `value` != 0
    text,            ///< str constant `name`
    scalar_type,     ///< ScalarType: the constant `dtype`, else the dtype of op input `index`
                     ///< (of output `index` when `value` is 1)
  } kind = input;
  size_t index = 0;
  std::vector<size_t> indices;
  std::vector<package::Expr> exprs;
  double value = 0;
  std::string name;
  std::optional<DType> dtype;
  c10::TypeKind type = c10::TypeKind::TensorType;  ///< the argument's type, Optional unwrapped
};

/// Where a shape symbol's value is read at launch: dimension `dim` of op input (or, with
/// `output`, op output) `tensor`.
struct SymbolSource {
  std::string symbol;
  bool output = false;
  size_t tensor = 0;
  size_t dim = 0;
};

struct Plan {
  c10::OperatorHandle handle;
  std::vector<Binding> arguments;  ///< one per schema argument
  /// Per schema return: the op output it fills (-1: none: a written argument's alias, a value
  /// that is not a tensor, which is not judged, or the Tensor[] return).
  std::vector<int> returned_output;
  int list_return = -1;              ///< the return that is a Tensor[], -1 when none
  std::vector<size_t> list_outputs;  ///< the outputs it fills, in order
  bool every_output_in_kgate_buffers = true;
  std::vector<SymbolSource> symbols;  ///< the shape symbols integer bindings read
  /// The arguments bound to None or a constant without the spec naming them, for the report's
  /// source line ("weight=None").
  std::vector<std::string> implicit;
};

/// The schema as torch prints it.
std::string schema_text(const c10::FunctionSchema& s);

/// A message's list of names, "a, b, c"; "(none)" when empty.
std::string listed(const std::vector<std::string>& names);

/// The plan of `spec`'s op against the kgate op `op`. Throws Error(usage) naming the argument.
Plan plan_for(const TorchOpSpec& spec, const OpSignature& op);

/// One launch: the boxed call with every argument bound from `call`, returned tensors copied into
/// kgate's buffers.
void call_op(const Plan& plan, Backend backend, const KernelCall& call);

}  // namespace kgate::torch_op
