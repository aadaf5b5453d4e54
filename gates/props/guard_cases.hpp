// Correctness cases on both sides of a guard's boundaries (a package's, in its op's terms).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/case.hpp"
#include "core/guard_model.hpp"
#include "core/op_signature.hpp"

namespace kgate::props {

/// The value nearest to `target` within [lo, hi] that is a multiple of `mult` (the next multiple
/// up, else the one below); nullopt when there is none. lo is taken as at least 0.
std::optional<int64_t> pick_value(int64_t target, int64_t lo, int64_t hi, int64_t mult);
/// `v` where it is a multiple of `mult`, else the multiples on either side of it: a boundary value
/// the op's domain cannot hold (D = 127 of a head size in steps of 2) is tried at its neighbours
/// (126 and 128), never as a case the op's reference cannot run.
std::vector<int64_t> in_steps(int64_t v, int64_t mult);

/// A case of `op` with these values of its symbols (every one of them), values "normal".
Case case_of(const OpSignature& op, DType dtype, const std::map<std::string, int64_t>& dims,
             Layout layout, uint64_t seed);

/// Correctness cases on both sides of every boundary of `guard`, all inside the op's shape domain
/// and at most `max_elements` elements per tensor:
///   - for every shape range: min-1, min, max, max+1 (and, with multiple_of > 1, a multiple and the
///     value above it), the other symbols at small values inside the guard;
///   - for every require predicate and op symbol it names: the two values around each of its
///     nearest flips;
///   - one case per op dtype the guard does not admit;
///   - one case per drawn layout (strided, offset, padded: row-padded, offset16: 16-byte but not
///     256-byte aligned).
/// The op's relations hold in every case. Family "guard_inside" or "guard_outside" by
/// guard.inside; values "normal"; seeds derive from `seed` and the guard's name.
std::vector<Case> guard_boundary_cases(const GuardModel& guard, const OpSignature& op,
                                       uint64_t seed, int64_t max_elements);

}  // namespace kgate::props
