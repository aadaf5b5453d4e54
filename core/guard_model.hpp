// Where a kernel may be used, in its op's terms: what case generation needs of a package's guard
// (gates/props/guard_cases.hpp). The package code builds it from a manifest
// (runtime/package/package_kernel.hpp, guard_model_of).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/case.hpp"
#include "core/dtype.hpp"

namespace kgate {

struct GuardModel {
  /// What the cases' seeds derive from ("guard/<name>").
  std::string name;
  /// A bound of guard.shapes on one op symbol: [min, max], a multiple of multiple_of.
  struct Range {
    std::string op_symbol;
    int64_t min = 0;
    int64_t max = 0;
    int64_t multiple_of = 1;
  };
  /// In the order the guard states them; several may bound one op symbol (each narrows it).
  std::vector<Range> shapes;
  /// A guard.require predicate: the op symbols it names, each with the values its comparisons
  /// name (a flip is looked for around them), and whether it holds for a case (nullopt: it cannot
  /// be evaluated there).
  struct Predicate {
    std::vector<std::pair<std::string, std::vector<int64_t>>> symbols;
    std::function<std::optional<bool>(const Case&)> holds;
  };
  std::vector<Predicate> require;
  /// Whether the guard admits a dtype.
  std::function<bool(DType)> admits_dtype;
  /// Whether a case is inside the whole guard (shapes, dtypes, ranks, layouts, predicates).
  std::function<bool(const Case&)> inside;
};

}  // namespace kgate
