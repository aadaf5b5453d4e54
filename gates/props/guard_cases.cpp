#include "gates/props/guard_cases.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "core/error.hpp"
#include "core/expr.hpp"
#include "core/rng.hpp"

namespace kgate::props {

std::optional<int64_t> pick_value(int64_t target, int64_t lo, int64_t hi, int64_t mult) {
  lo = std::max<int64_t>(lo, 0);
  if (lo > hi) return std::nullopt;
  const int64_t v = std::clamp(target, lo, hi);
  if (mult <= 1) return v;
  const int64_t up = v % mult == 0 ? v : (v / mult + 1) * mult;
  if (up <= hi) return up;
  const int64_t down = v / mult * mult;
  if (down >= lo) return down;
  return std::nullopt;
}

std::vector<int64_t> in_steps(int64_t v, int64_t mult) {
  if (mult <= 1 || v % mult == 0) return {v};
  const int64_t down = v >= 0 ? v / mult * mult : -((-v + mult - 1) / mult) * mult;
  return {down, down + mult};
}

namespace {

// One op symbol: the op's domain narrowed by the guard's ranges on it.
struct SymbolPlan {
  int64_t lo = 1, hi = 1, mult = 1;
  bool guarded = false;
  GuardModel::Range range;  // the last range on it
};

}  // namespace

Case case_of(const OpSignature& op, DType dtype, const std::map<std::string, int64_t>& dims,
             Layout layout, uint64_t seed) {
  Case c;
  c.op = op.name;
  c.dtype = dtype;
  c.layout = layout;
  c.values = Values::normal;
  c.seed = seed;
  for (const auto& s : op.symbols) c.dims.emplace_back(s.name, dims.at(s.name));
  return c;
}

namespace {

int64_t numel_of(const std::map<std::string, int64_t>& dims) {
  int64_t n = 1;
  for (const auto& [name, v] : dims) {
    if (v != 0 && n > std::numeric_limits<int64_t>::max() / v)
      return std::numeric_limits<int64_t>::max();
    n *= v;
  }
  return n;
}

}  // namespace

std::vector<Case> guard_boundary_cases(const GuardModel& guard, const OpSignature& op,
                                       uint64_t seed, int64_t max_elements) {
  std::map<std::string, SymbolPlan> plans;  // by op symbol
  std::map<std::string, int64_t> inside, smallest;
  for (const auto& s : op.symbols) {
    SymbolPlan p;
    p.lo = std::max<int64_t>(s.min, 1);
    p.hi = s.max;
    const int64_t op_mult = std::max<int64_t>(1, s.multiple_of);
    p.mult = op_mult;
    for (const auto& r : guard.shapes) {
      if (r.op_symbol != s.name) continue;
      p.guarded = true;
      p.range = r;
      p.lo = std::max(p.lo, r.min);
      p.hi = std::min(p.hi, r.max);
      p.mult = std::lcm(op_mult, std::max<int64_t>(1, r.multiple_of));
    }
    // Small values inside the guard; the row a little longer and not a multiple of 32.
    const int64_t target = s.name == op.reduced_symbol ? 264 : 3;
    const auto v = pick_value(target, p.lo, p.hi, p.mult);
    const auto low = pick_value(p.lo, p.lo, p.hi, p.mult);
    inside[s.name] = v ? *v : std::clamp<int64_t>(target, std::max<int64_t>(s.min, 1), s.max);
    smallest[s.name] = low ? *low : inside[s.name];
    plans[s.name] = p;
  }
  DType dtype_in = op.dtypes.empty() ? DType::f32 : op.dtypes.front();
  for (DType d : op.dtypes)
    if (guard.admits_dtype(d)) {
      dtype_in = d;
      break;
    }

  std::vector<Case> out;
  std::set<std::string> seen;
  uint64_t index = 0;
  // The op's relations ("K <= N") hold in every case: where a boundary value breaks one, the other
  // symbols take their smallest values; a case that still breaks one is not made.
  const auto relations_hold = [&](const std::map<std::string, int64_t>& dims) {
    std::vector<std::pair<std::string, int64_t>> list(dims.begin(), dims.end());
    const auto values = package::symbol_values(list);
    for (const auto& r : op.relations) {
      try {
        if (package::evaluate_expr(r, values) == 0) return false;
      } catch (const Error&) {
        return false;
      }
    }
    return true;
  };
  auto add = [&](std::map<std::string, int64_t> dims, const std::string& varied, DType dtype,
                 Layout layout) {
    if (!relations_hold(dims)) {
      for (auto& [name, v] : dims)
        if (name != varied) v = smallest[name];
      if (!relations_hold(dims)) return;
    }
    if (numel_of(dims) > max_elements) {
      for (auto& [name, v] : dims)
        if (name != varied) v = smallest[name];
      if (numel_of(dims) > max_elements || !relations_hold(dims)) return;
    }
    Case c = case_of(op, dtype, dims, layout, derive_seed(seed, "guard/" + guard.name, index++));
    c.family = guard.inside(c) ? "guard_inside" : "guard_outside";
    if (seen.insert(c.id()).second) out.push_back(std::move(c));
  };

  for (const auto& s : op.symbols) {
    const SymbolPlan& p = plans[s.name];
    if (!p.guarded) continue;
    std::set<int64_t> values;
    const GuardModel::Range& r = p.range;
    for (int64_t v : {r.min - 1, r.min, r.max}) values.insert(v);
    if (r.max < std::numeric_limits<int64_t>::max()) values.insert(r.max + 1);
    if (p.mult > 1) {
      if (auto a = pick_value(r.min, std::max<int64_t>(r.min, 1), r.max, p.mult)) {
        values.insert(*a);
        values.insert(*a + 1);
        if (*a - 1 >= r.min) values.insert(*a - 1);
      }
      if (auto a = pick_value(inside[s.name], p.lo, p.hi, p.mult)) values.insert(*a + 1);
    }
    for (int64_t boundary : values)
      for (int64_t v : in_steps(boundary, s.multiple_of)) {
        if (v < s.min || v > s.max) continue;  // outside the op's domain: cannot be generated
        auto dims = inside;
        dims[s.name] = v;
        add(dims, s.name, dtype_in, Layout::contiguous);
      }
  }
  // Both sides of every require predicate: for each shape symbol it names, the nearest values
  // around the inside point where it flips (the tensor symbols flip with the layouts below).
  for (const auto& pred : guard.require) {
    for (const auto& [op_symbol, bounds] : pred.symbols) {
      const SymbolDomain* d = op.symbol(op_symbol);
      if (!d) continue;
      const auto holds = [&](int64_t v) -> std::optional<bool> {
        auto dims = inside;
        dims[d->name] = v;
        return pred.holds(case_of(op, dtype_in, dims, Layout::contiguous, 0));
      };
      const int64_t lo = std::max<int64_t>(d->min, 0), hi = d->max, at = inside[d->name];
      std::set<int64_t> candidates = {lo, hi};
      for (int64_t k = 0; k <= 32; ++k) {
        if (at - k >= lo) candidates.insert(at - k);
        if (at <= hi - k) candidates.insert(at + k);
      }
      for (int64_t b : bounds)
        if (b > lo && b < hi)  // then b - 1 and b + 1 cannot overflow
          for (int64_t v : {b - 1, b, b + 1}) candidates.insert(v);
      // Adjacent candidates that disagree bracket a flip: bisect to the two neighbouring values.
      std::vector<std::pair<int64_t, bool>> known;
      for (int64_t v : candidates)
        if (auto h = holds(v)) known.emplace_back(v, *h);
      std::vector<std::pair<int64_t, int64_t>> flips;
      for (std::size_t i = 1; i < known.size(); ++i) {
        if (known[i].second == known[i - 1].second) continue;
        int64_t a = known[i - 1].first, b = known[i].first;
        const bool at_a = known[i - 1].second;
        while (b - a > 1) {
          const int64_t mid = a + (b - a) / 2;
          const auto h = holds(mid);
          if (!h) break;
          (*h == at_a ? a : b) = mid;
        }
        flips.emplace_back(a, b);
      }
      // The flips nearest the inside point (at most two per symbol and predicate).
      std::sort(flips.begin(), flips.end(), [&](const auto& x, const auto& y) {
        return std::llabs(x.first - at) < std::llabs(y.first - at);
      });
      for (std::size_t i = 0; i < flips.size() && i < 2; ++i)
        for (int64_t flip : {flips[i].first, flips[i].second})
          for (int64_t v : in_steps(flip, d->multiple_of)) {
            if (v < lo || v > hi) continue;
            auto dims = inside;
            dims[d->name] = v;
            add(dims, d->name, dtype_in, Layout::contiguous);
          }
    }
  }
  for (DType d : op.dtypes)
    if (!guard.admits_dtype(d)) add(inside, "", d, Layout::contiguous);
  add(inside, "", dtype_in, Layout::contiguous);
  add(inside, "", dtype_in, Layout::strided);
  add(inside, "", dtype_in, Layout::offset);
  add(inside, "", dtype_in, Layout::padded);
  add(inside, "", dtype_in, Layout::offset16);
  return out;
}

}  // namespace kgate::props
