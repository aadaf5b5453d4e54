// Verdicts under a kernel's contract (core/contract.hpp), and the contract a kernel without one
// would need. Host-only.
//
// Inside the contract a case is judged as for any kernel; a refusal (an error the kernel's host
// code raised, rule "refused") is then a failure: it refused an input it declares it accepts.
// Outside it, one question is asked: does the kernel refuse cleanly (passes) or return wrong values
// or fault? The second is a finding of its own, failed by default, a warning under
// "outside_contract": "warn".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/contract.hpp"
#include "core/report.hpp"

namespace kgate::correctness {

/// What a kernel's cases showed against its contract, for report.json's correctness.contract.
struct ContractTally {
  int64_t outside = 0;  ///< cases outside the contract
  int64_t refused = 0;  ///< of them, refused cleanly
  int64_t wrong = 0;    ///< of them, wrong values or a fault
};
nlohmann::json to_json(const Contract& contract, const ContractTally& tally);

/// Judges `r` (of case `c`) against `contract`: sets r.outside_contract to the reason a case is
/// outside, rewords the verdict, and counts it. `warn`: a finding outside the contract is a
/// warning (appended to `warnings`, the case passes) instead of a failure.
void judge_against_contract(CaseResult& r, const Contract& contract, const OpSignature& op,
                            bool warn, ContractTally& tally, std::vector<std::string>& warnings);

/// The cases of a kernel without a contract, by what a contract states (layout, dtype, empty),
/// and the contract that would describe what it passed.
class ContractHint {
 public:
  void add(const Case& c, const CaseResult& r);
  /// "" when no contract would tell the failures apart (a failure inside every candidate, or
  /// nothing failed); else a hint naming the contract, for the kernel's warnings.
  std::string hint(const std::string& kernel) const;

 private:
  struct Counts {
    int64_t passed = 0, failed = 0;
  };
  std::map<std::string, Counts> layouts_;
  std::map<DType, Counts> dtypes_;
  Counts empty_, non_empty_;
  /// Per failed case: its layout, dtype and emptiness.
  std::vector<std::tuple<std::string, DType, bool>> failed_;
};

}  // namespace kgate::correctness
