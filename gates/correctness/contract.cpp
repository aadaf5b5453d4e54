// Verdicts under a kernel's contract, and the contract hint (contract.hpp).
#include "gates/correctness/contract.hpp"

#include <algorithm>
#include <tuple>

#include "core/safe_text.hpp"

namespace kgate::correctness {
namespace {

bool is_empty(const Case& c) {
  for (const auto& [name, v] : c.dims)
    if (v == 0) return true;
  return false;
}

}  // namespace

nlohmann::json to_json(const Contract& contract, const ContractTally& tally) {
  return {{"declared", to_json(contract)},
          {"outside", tally.outside},
          {"refused", tally.refused},
          {"wrong", tally.wrong}};
}

void judge_against_contract(CaseResult& r, const Contract& contract, const OpSignature& op,
                            bool warn, ContractTally& tally, std::vector<std::string>& warnings) {
  const std::string why = outside_contract(contract, op, r.kcase);
  if (why.empty()) {
    if (r.outcome == Outcome::failed && r.rule == Reason::refused)
      r.message = "refused an input it declares it accepts: " + r.message;
    return;
  }
  ++tally.outside;
  r.outside_contract = why;
  if (r.rule == Reason::refused) {
    ++tally.refused;
    r.outcome = Outcome::passed;
    r.message = "refused cleanly outside its contract (" + why + "): " + r.message;
    return;
  }
  if (r.outcome != Outcome::failed) return;
  ++tally.wrong;
  r.message =
      std::string(r.rule == Reason::fault || r.rule == Reason::crash ? "faults on"
                                                                     : "returns wrong values for") +
      " inputs outside its contract (" + why +
      "): add a check that refuses them, or support them and widen the contract; " + r.message;
  if (warn) {
    warnings.push_back("case " + r.kcase.id() + ": " + r.message);
    r.outcome = Outcome::passed;
  }
}

void ContractHint::add(const Case& c, const CaseResult& r) {
  if (r.outcome != Outcome::passed && r.outcome != Outcome::failed) return;
  const bool failed = r.outcome == Outcome::failed;
  auto count = [failed](Counts& k) { ++(failed ? k.failed : k.passed); };
  count(layouts_[contract_layout(c.layout)]);
  count(dtypes_[c.dtype]);
  const bool empty = is_empty(c);
  count(empty ? empty_ : non_empty_);
  if (failed) failed_.emplace_back(contract_layout(c.layout), c.dtype, empty);
}

std::string ContractHint::hint(const std::string& kernel) const {
  if (failed_.empty()) return "";
  // The smallest statement that leaves every failed case out: the failing layouts alone, else the
  // empty tensors, the failing dtypes, then their combinations. It must keep contiguous inputs and
  // a dtype; else no contract tells the failures apart from the cases that passed.
  for (const int dims : {1, 4, 2, 5, 3, 6, 7}) {  // bit 1: layouts, 2: dtypes, 4: empty
    std::vector<std::string> layouts;
    for (const auto& [l, k] : layouts_)
      if (!(dims & 1) || k.failed == 0) layouts.push_back(l);
    std::vector<DType> dtypes;
    for (const auto& [d, k] : dtypes_)
      if (!(dims & 2) || k.failed == 0) dtypes.push_back(d);
    const bool empty = !(dims & 4) || empty_.failed == 0;
    if (std::find(layouts.begin(), layouts.end(), "contiguous") == layouts.end() || dtypes.empty())
      continue;
    const bool separates = std::all_of(failed_.begin(), failed_.end(), [&](const auto& f) {
      const auto& [l, d, e] = f;
      return std::find(layouts.begin(), layouts.end(), l) == layouts.end() ||
             std::find(dtypes.begin(), dtypes.end(), d) == dtypes.end() || (e && !empty);
    });
    if (!separates) continue;
    nlohmann::json c = nlohmann::json::object();
    std::vector<std::string> where;
    if (dtypes.size() < dtypes_.size()) {
      std::vector<std::string> names;
      for (const DType d : dtypes) names.push_back(dtype_name(d));
      c["dtypes"] = names;
      for (const auto& [d, k] : dtypes_)
        if (std::find(dtypes.begin(), dtypes.end(), d) == dtypes.end())
          where.push_back(std::string(dtype_name(d)) + " cases");
    }
    if (layouts.size() < layouts_.size()) {
      c["layouts"] = layouts;
      for (const auto& [l, k] : layouts_)
        if (std::find(layouts.begin(), layouts.end(), l) == layouts.end())
          where.push_back(l + " inputs");
    }
    if (!empty) {
      c["empty"] = false;
      where.push_back("empty tensors");
    }
    return "'" + kernel + "' failed only on " + join(where) +
           ": if it is not meant to take them, state what it accepts with \"contract\": " +
           c.dump() + " under kernels." + kernel +
           " in the config; kgate then checks that it refuses them cleanly";
  }
  return "";
}

}  // namespace kgate::correctness
