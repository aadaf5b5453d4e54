// Greedy case shrinking.
#include "gates/props/shrink.hpp"
#include "gates/props/generators.hpp"

#include <algorithm>
#include <set>

namespace kgate::props {

std::vector<int64_t> shrink_candidates(int64_t current, int64_t min,
                                       const std::vector<int64_t>& tile_sizes) {
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  auto add = [&](int64_t v) {
    if (v >= min && v < current && seen.insert(v).second) out.push_back(v);
  };
  add(min);
  add(1);
  add(2);
  // Tile boundaries below current: t-1, t, t+1 of each tile multiple (the usual places bugs hide).
  std::vector<int64_t> edges;
  for (int64_t t : tile_sizes)
    for (int64_t m = 1; t > 0 && t * m - 1 < current && m <= 64; ++m) {
      edges.push_back(t * m - 1);
      edges.push_back(t * m);
      edges.push_back(t * m + 1);
    }
  std::sort(edges.begin(), edges.end());
  for (int64_t e : edges) add(e);
  add(current / 2);
  add(current - 1);
  return out;
}

ShrinkResult shrink(const Case& failing, const OpSignature& op,
                    const std::vector<int64_t>& tile_sizes,
                    const std::function<bool(const Case&)>& still_fails, int64_t max_attempts) {
  ShrinkResult r{failing, 0, 0};
  // Captured inputs are the tensors of a file: there is nothing smaller to draw from them.
  if (failing.values == Values::captured) return r;
  // A huge case stays huge (its bug needs 2^31 elements), and each attempt costs seconds.
  const bool huge = is_huge(op, failing);
  if (huge) max_attempts = std::min<int64_t>(max_attempts, 12);
  auto attempt = [&](const Case& candidate) {
    if (r.attempts >= max_attempts || (huge && !is_huge(op, candidate))) return false;
    ++r.attempts;
    if (!still_fails(candidate)) return false;
    r.minimal = candidate;
    ++r.steps;
    return true;
  };
  bool progress = true;
  while (progress && r.attempts < max_attempts) {
    progress = false;
    // Values toward the simplest family that still fails.
    for (Values v : {Values::normal, Values::uniform}) {
      if (r.minimal.values == v || r.minimal.values == Values::normal) break;
      Case c = r.minimal;
      c.values = v;
      if (attempt(c)) {
        progress = true;
        break;
      }
    }
    if (r.minimal.layout != Layout::contiguous) {
      Case c = r.minimal;
      c.layout = Layout::contiguous;
      if (attempt(c)) progress = true;
    }
    // Batch-like symbols first (all but the reduced one), then the reduced symbol.
    std::vector<std::string> order;
    for (const auto& [name, v] : r.minimal.dims)
      if (name != op.reduced_symbol) order.push_back(name);
    for (const auto& [name, v] : r.minimal.dims)
      if (name == op.reduced_symbol) order.push_back(name);
    for (const auto& name : order) {
      const SymbolDomain* d = op.symbol(name);
      const int64_t lo = d ? d->min : 0;
      const std::vector<int64_t> tiles =
          name == op.reduced_symbol ? tile_sizes : std::vector<int64_t>{};
      for (int64_t v : shrink_candidates(r.minimal.dim(name), lo, tiles)) {
        Case c = r.minimal;
        c.set_dim(name, v);
        if (!props::in_domain(op, c))
          continue;  // a multiple_of or a relation of the op rules it out
        if (attempt(c)) {
          progress = true;
          break;
        }
      }
    }
  }
  return r;
}

}  // namespace kgate::props
