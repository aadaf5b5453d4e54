// Shrinking: reduce a failing case to a minimal one that still fails.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/case.hpp"
#include "core/op_signature.hpp"

namespace kgate::props {

struct ShrinkResult {
  Case minimal;
  int64_t attempts = 0;  ///< predicate evaluations
  int64_t steps = 0;     ///< accepted reductions
};

/// Greedy shrinking: values toward the simplest family, layout toward contiguous, every symbol
/// toward its minimum (1 first, then smaller tile boundaries, halving, minus one). `still_fails`
/// is called on candidates; at most `max_attempts` calls (12 for a huge case, whose candidates all
/// stay past 2^31 elements). Deterministic.
ShrinkResult shrink(const Case& failing, const OpSignature& op,
                    const std::vector<int64_t>& tile_sizes,
                    const std::function<bool(const Case&)>& still_fails,
                    int64_t max_attempts = 200);

/// Candidate values for one symbol below `current`, most reduced first.
std::vector<int64_t> shrink_candidates(int64_t current, int64_t min,
                                       const std::vector<int64_t>& tile_sizes);

}  // namespace kgate::props
