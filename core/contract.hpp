// A kernel's contract: the inputs it states it accepts, as a precondition. A torch op is called
// directly by any caller, so what it accepts is not a dispatcher's choice but its own promise:
//
//   "kernels": {"vllm._C.rms_norm": {"contract": {
//       "dtypes": ["f16", "bf16"],             // of the op's dtypes (default: all)
//       "layouts": ["contiguous", "row_padded"],  // contiguous, row_padded, offset, strided
//       "alignment": 16,                       // bytes every base pointer is aligned to (0: any)
//       "require": ["N % 8 == 0", "N <= 8192"],   // integer expressions of the op's symbols
//       "empty": false                         // takes tensors with a zero dimension (default
//       true)
//   }}}
//
// Inside the contract, cases are judged as for any kernel, and an input the kernel refuses (a
// thrown error) is a failure. Outside it, a clean refusal passes and wrong values or a fault are a
// finding of their own (runtime/pipeline.cpp). Host-only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/case.hpp"
#include "core/dtype.hpp"
#include "core/guard_model.hpp"
#include "core/op_signature.hpp"

namespace kgate {

struct Contract {
  std::vector<DType> dtypes;         ///< empty: every dtype of the op
  std::vector<std::string> layouts;  ///< contiguous, row_padded, offset, strided; empty: all
  int64_t alignment = 0;             ///< bytes every base pointer is aligned to; 0: any
  std::vector<std::string> require;  ///< integer expressions over the op's shape symbols
  bool empty = true;                 ///< takes tensors with a zero dimension
  std::string text;                  ///< the contract as written (compact JSON), for messages
};

/// The layout names a contract takes, in words ("contiguous, row_padded, offset or strided").
std::string contract_layout_list();

/// A case layout in a contract's words: offset16 is an offset base pointer (16-byte aligned).
std::string contract_layout(Layout l);

/// Parses a contract object; throws a usage Error naming `where` + the field ("kernels.X.contract.
/// layouts[1]") and what was expected. Unknown keys are errors.
Contract parse_contract(const nlohmann::json& j, const std::string& where);
nlohmann::json to_json(const Contract& c);

/// Checks the contract against the op it is applied to: dtypes of the op, require over its
/// symbols. Throws a usage Error naming `where` (e.g. "kernels.mylib.rms.contract") and the fix.
void check_contract(const Contract& c, const OpSignature& op, const std::string& where);

/// "" when case `c` is inside the contract, else why not, in the contract's terms ("layout strided
/// is not among contract.layouts [contiguous, row_padded]", "N=257 breaks contract.require
/// \"N % 8 == 0\""). The first reason found, in the order dtypes, empty, layouts, alignment,
/// requires.
std::string outside_contract(const Contract& c, const OpSignature& op, const Case& kcase);

/// The contract as a guard (core/guard_model.hpp): its boundary cases give both sides of every
/// relation, a case per dtype it leaves out and per layout (gates/props/guard_cases.hpp).
GuardModel guard_model_of(const Contract& c, const OpSignature& op, const std::string& name);

}  // namespace kgate
