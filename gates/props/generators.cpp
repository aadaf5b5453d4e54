// Deterministic case generation.
#include "gates/props/generators.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/expr.hpp"
#include "core/rng.hpp"

namespace kgate::props {
namespace {

int64_t log_uniform(Rng& rng, int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  const double l = std::log(static_cast<double>(std::max<int64_t>(lo, 1)));
  const double h = std::log(static_cast<double>(hi) + 1.0);
  int64_t v = static_cast<int64_t>(std::exp(l + (h - l) * rng.uniform()));
  if (lo == 0 && rng.uniform() < 0.02) v = 0;
  return std::clamp(v, lo, hi);
}

std::vector<DType> supported_dtypes(const OpSignature& op, const KernelTraits& traits) {
  std::vector<DType> out;
  for (DType d : op.dtypes)
    if (traits.dtypes.empty() ||
        std::find(traits.dtypes.begin(), traits.dtypes.end(), d) != traits.dtypes.end())
      out.push_back(d);
  return out;
}

// Keeps the case's total size under max_elements by shrinking the non-reduced symbols first.
void fit_size(Case& c, const OpSignature& op, int64_t max_elements) {
  for (int guard = 0; guard < 128 && c.numel_hint() > max_elements; ++guard) {
    bool changed = false;
    for (auto& [name, v] : c.dims) {
      if (name == op.reduced_symbol || v <= 1) continue;
      const SymbolDomain* d = op.symbol(name);
      const int64_t lo = d ? std::max<int64_t>(d->min, 1) : 1;
      if (v > lo) {
        v = std::max(lo, v / 2);
        changed = true;
      }
      if (c.numel_hint() <= max_elements) return;
    }
    if (!changed) {
      for (auto& [name, v] : c.dims)
        if (name == op.reduced_symbol) v = std::max<int64_t>(1, v / 2);
    }
  }
}

Case base_case(const OpSignature& op, DType dtype, uint64_t seed, const std::string& family) {
  Case c;
  c.op = op.name;
  c.dtype = dtype;
  c.seed = seed;
  c.family = family;
  for (const auto& s : op.symbols) c.dims.emplace_back(s.name, s.min);
  return c;
}

// The nearest multiple of the symbol's multiple_of at or below v, kept within [min, max].
int64_t to_multiple(const SymbolDomain& d, int64_t v) {
  if (d.multiple_of <= 1) return v;
  int64_t m = v / d.multiple_of * d.multiple_of;
  if (m < d.min) m = (d.min + d.multiple_of - 1) / d.multiple_of * d.multiple_of;
  return m;
}

Values pick(Rng& rng, std::initializer_list<Values> choices) {
  std::vector<Values> v(choices);
  return v[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(v.size()) - 1))];
}

}  // namespace

namespace {

// Elements of `t` at these symbol values, in double (exact to 2^53, saturating beyond); a shape
// entry that cannot be evaluated counts as 0.
double tensor_elements(const TensorSpec& t, const package::SymbolValues& values) {
  double n = 1;
  for (const auto& e : t.shape) {
    try {
      n *= static_cast<double>(package::evaluate_expr(e, values));
    } catch (const Error&) {
      return 0;
    }
  }
  return n;
}

std::vector<const TensorSpec*> tensors_of(const OpSignature& op) {
  std::vector<const TensorSpec*> out;
  for (const auto& t : op.inputs) out.push_back(&t);
  for (const auto& t : op.outputs) out.push_back(&t);
  return out;
}

// The tensor with the most elements at the domain's maxima (the one a huge case grows).
const TensorSpec* largest_at_max(const OpSignature& op) {
  package::SymbolValues at_max;
  for (const auto& s : op.symbols) at_max[s.name] = s.max;
  const TensorSpec* best = nullptr;
  double most = -1;
  for (const TensorSpec* t : tensors_of(op)) {
    const double n = tensor_elements(*t, at_max);
    if (n > most) {
      most = n;
      best = t;
    }
  }
  return best;
}

bool is_symbol_of(const OpSignature& op, const std::string& entry) {
  return op.symbol(entry) != nullptr;
}

// True when the tensor's shape changes with `symbol` (evaluated at two values of it).
bool depends_on(const TensorSpec& t, const std::string& symbol, package::SymbolValues values) {
  values[symbol] = 3;
  const double a = tensor_elements(t, values);
  values[symbol] = 5;
  return tensor_elements(t, values) != a;
}

}  // namespace

int64_t largest_tensor_numel(const OpSignature& op, const Case& c) {
  const auto values = package::symbol_values(c.dims);
  double most = 0;
  for (const TensorSpec* t : tensors_of(op)) most = std::max(most, tensor_elements(*t, values));
  return most >= 9.2e18 ? INT64_MAX : static_cast<int64_t>(most);
}

std::string slice_symbol(const OpSignature& op) {
  const TensorSpec* big = largest_at_max(op);
  if (!big || big->shape.empty() || !is_symbol_of(op, big->shape[0]) || op.outputs.empty())
    return "";
  const std::string s = big->shape[0];
  package::SymbolValues values;
  for (const auto& d : op.symbols) values[d.name] = 7;
  for (const auto& t : op.outputs)
    if (t.shape.empty() || t.shape[0] != s)
      return "";  // (an in-place output is sliced as its input)
  for (const auto& t : op.inputs) {
    if (!t.shape.empty() && t.shape[0] == s) continue;
    if (depends_on(t, s, values)) return "";
    // An integer input may hold positions along the symbol (segment offsets): slicing would cut
    // through what it points at.
    if (!t.dtype.empty() && !is_floating(parse_dtype(t.dtype))) return "";
  }
  for (const auto& t : tensors_of(op))
    for (size_t k = 1; k < t->shape.size(); ++k)
      if (t->shape[k] == s) return "";
  return s;
}

std::optional<Case> huge_case(const OpSignature& op, const KernelTraits& traits, uint64_t seed,
                              std::string* why) {
  auto refuse = [&](const std::string& reason) -> std::optional<Case> {
    if (why) *why = reason;
    return std::nullopt;
  };
  std::vector<DType> dtypes = supported_dtypes(op, traits);
  if (dtypes.empty()) return refuse("the kernel supports none of the op's dtypes");
  // The fewest bytes per element: the same index arithmetic in the least memory.
  const DType dtype = *std::min_element(
      dtypes.begin(), dtypes.end(), [](DType a, DType b) { return dtype_size(a) < dtype_size(b); });
  const TensorSpec* big = largest_at_max(op);
  package::SymbolValues at_max;
  for (const auto& s : op.symbols) at_max[s.name] = s.max;
  if (!big || tensor_elements(*big, at_max) <= static_cast<double>(kHugeElements))
    return refuse("op '" + op.name + "' holds at most " +
                  std::to_string(big ? static_cast<int64_t>(tensor_elements(*big, at_max)) : 0) +
                  " elements in a tensor (its symbols' max), not past 2^31");
  std::string
      grow;  // the symbol scaled to pass 2^31: the big tensor's leading symbol if it has one
  for (const auto& e : big->shape)
    if (is_symbol_of(op, e)) {
      grow = e;
      break;
    }
  if (grow.empty())
    return refuse("op '" + op.name + "': tensor '" + big->name + "' has no symbol in its shape");

  Case c = base_case(op, dtype, derive_seed(seed, op.name + "/huge", 0), "huge");
  c.values = Values::normal;
  for (auto& [name, v] : c.dims) {
    const SymbolDomain& d = *op.symbol(name);
    const int64_t typical = d.typical_max > 0 ? std::min(d.typical_max, d.max) : d.max;
    v = to_multiple(d, std::clamp<int64_t>(typical, std::max<int64_t>(d.min, 1), d.max));
  }
  const SymbolDomain& g = *op.symbol(grow);
  for (int round = 0; round < 256; ++round) {
    c.set_dim(grow, 1);
    const double per_unit = tensor_elements(*big, package::symbol_values(c.dims));
    if (per_unit <= 0)
      return refuse("op '" + op.name + "': tensor '" + big->name + "' is empty at typical sizes");
    // A few rows past the one that holds element 2^31.
    int64_t need =
        static_cast<int64_t>(std::floor(static_cast<double>(kHugeElements) / per_unit)) + 2;
    if (g.multiple_of > 1) need = (need + g.multiple_of - 1) / g.multiple_of * g.multiple_of;
    if (need <= g.max) {
      c.set_dim(grow, need);
      for (int tries = 0; tries < 64 && !in_domain(op, c); ++tries)
        c.set_dim(grow, c.dim(grow) + std::max<int64_t>(g.multiple_of, 1));
      if (in_domain(op, c) && c.dim(grow) <= g.max && is_huge(op, c)) return c;
      return refuse("op '" + op.name + "': no huge shape satisfies its relations");
    }
    // The leading symbol alone cannot get there: double the big tensor's other symbols in turn,
    // the one with the most room first.
    std::string widen;
    double room = 1;
    for (const auto& [name, v] : c.dims) {
      if (name == grow || !depends_on(*big, name, package::symbol_values(c.dims))) continue;
      const double r =
          static_cast<double>(op.symbol(name)->max) / static_cast<double>(std::max<int64_t>(v, 1));
      if (r > room) {
        room = r;
        widen = name;
      }
    }
    if (widen.empty()) return refuse("op '" + op.name + "': no huge shape fits its symbols' max");
    const SymbolDomain& w = *op.symbol(widen);
    c.set_dim(widen, to_multiple(w, std::min(w.max, std::max<int64_t>(c.dim(widen), 1) * 2)));
  }
  return refuse("op '" + op.name + "': no huge shape found");
}

std::vector<int64_t> huge_rows(const OpSignature& op, const Case& c, const std::string& symbol) {
  const int64_t rows = c.dim(symbol);
  std::set<int64_t> out;
  for (int64_t r : {int64_t{0}, int64_t{1}, rows / 2})
    if (r < rows) out.insert(r);
  Case one = c;
  one.set_dim(symbol, 1);
  const int64_t per_row = std::max<int64_t>(1, largest_tensor_numel(op, one));
  const int64_t first =
      std::min(rows, kHugeElements / per_row);  // holds element 2^31 (or ends before it)
  for (int64_t r = std::max<int64_t>(0, first - 1); r < rows && out.size() < 70; ++r) out.insert(r);
  for (int64_t r = std::max<int64_t>(0, rows - 4); r < rows; ++r) out.insert(r);  // the very end
  return {out.begin(), out.end()};
}

bool in_domain(const OpSignature& op, const Case& c) {
  for (const auto& s : op.symbols)
    if (s.multiple_of > 1 && c.dim(s.name) % s.multiple_of != 0) return false;
  if (op.relations.empty()) return true;
  const auto values = package::symbol_values(c.dims);
  for (const auto& r : op.relations) {
    try {
      if (package::evaluate_expr(r, values) == 0) return false;
    } catch (const Error&) {
      return false;  // e.g. a modulo by zero: outside the domain
    }
  }
  return true;
}

std::vector<int64_t> ragged_sizes(const SymbolDomain& domain,
                                  const std::vector<int64_t>& tile_sizes) {
  std::set<int64_t> s = {0, 1, 2, 3, 5, 7, 13, 17, 31, 61, 127, 251, 509, 1021, 2039, 4093};
  for (int k = 2; k <= 20; ++k) {
    s.insert((int64_t{1} << k) - 1);
    s.insert((int64_t{1} << k) + 1);
  }
  for (int64_t t : tile_sizes) {
    for (int64_t m : {int64_t{1}, int64_t{2}, int64_t{4}}) {
      s.insert(t * m - 1);
      s.insert(t * m);
      s.insert(t * m + 1);
    }
  }
  s.insert(domain.max);
  s.insert(domain.max - 1);
  std::vector<int64_t> out;
  for (int64_t v : s)
    if (v >= domain.min && v <= domain.max &&
        (domain.multiple_of <= 1 || v % domain.multiple_of == 0))
      out.push_back(v);
  if (out.empty()) out.push_back(to_multiple(domain, domain.min));
  return out;
}

std::vector<int64_t> all_tile_sizes(const KernelTraits& traits) {
  std::set<int64_t> s(traits.tile_sizes.begin(), traits.tile_sizes.end());
  for (const auto& f : traits.found_sizes) s.insert(f.size);
  s.erase(0);
  return {s.begin(), s.end()};
}

std::string edge_symbol(const OpSignature& op) {
  if (!op.reduced_symbol.empty()) return op.reduced_symbol;
  for (const auto& t : op.inputs)
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it)
      if (op.symbol(*it)) return *it;
  return op.symbols.empty() ? "" : op.symbols.back().name;
}

namespace {

// The sizes of the spread tier: 2^k +- 1, primes, 2^k, tile multiples +- 1 and the domain's top.
std::set<int64_t> spread_candidates(const SymbolDomain& domain, const std::vector<int64_t>& tiles) {
  std::set<int64_t> s = {5,   7,    13,   17,   31,   61,    127,   251,
                         509, 1021, 2039, 4093, 8191, 16381, 32749, 65521};
  for (int k = 2; k <= 24; ++k) {
    s.insert((int64_t{1} << k) - 1);
    s.insert(int64_t{1} << k);
    s.insert((int64_t{1} << k) + 1);
  }
  for (int64_t t : tiles)
    for (int64_t m : {int64_t{2}, int64_t{4}})
      if (t <= (int64_t{1} << 40)) {
        s.insert(t * m - 1);
        s.insert(t * m + 1);
      }
  s.insert(domain.max);
  s.insert(domain.max - 1);
  return s;
}

std::string spread_detail(int64_t v) {
  for (int k = 1; k <= 62; ++k) {
    const int64_t p = int64_t{1} << k;
    if (v == p) return "2^" + std::to_string(k);
    if (v == p - 1) return "2^" + std::to_string(k) + " - 1";
    if (v == p + 1) return "2^" + std::to_string(k) + " + 1";
  }
  return std::to_string(v);
}

}  // namespace

std::vector<Edge> ragged_edges(const SymbolDomain& domain, const KernelTraits& traits,
                               uint64_t seed) {
  std::vector<Edge> out;
  std::set<int64_t> taken;
  const int64_t step = std::max<int64_t>(1, domain.multiple_of);
  auto add = [&](int64_t v, const std::string& origin, const std::string& detail) {
    if (v < domain.min || v > domain.max || v % step != 0 || !taken.insert(v).second) return;
    out.push_back({v, origin, detail});
  };
  // A size's neighbours: +-1, or the multiples of the domain's step on each side.
  auto below = [&](int64_t t) { return step == 1 ? t - 1 : (t - 1) / step * step; };
  auto above = [&](int64_t t) { return step == 1 ? t + 1 : (t / step + 1) * step; };
  auto tier = [&](const std::vector<std::pair<int64_t, std::string>>& sizes,
                  const std::string& origin) {
    for (const auto& [t, what] : sizes) {
      add(below(t), origin, what + " - " + std::to_string(t - below(t)));
      add(above(t), origin, what + " + " + std::to_string(above(t) - t));
    }
    for (const auto& [t, what] : sizes) add(t, origin, what);
  };
  std::vector<std::pair<int64_t, std::string>> declared;
  for (int64_t t : traits.tile_sizes)
    if (t > 0) declared.emplace_back(t, "tile " + std::to_string(t));
  tier(declared, "declared");
  for (const char* origin : {"manifest", "observed"}) {
    std::vector<std::pair<int64_t, std::string>> found;
    for (const auto& f : traits.found_sizes)
      if (f.origin == origin && f.size > 0)
        found.emplace_back(f.size, f.detail.empty() ? std::to_string(f.size) : f.detail);
    tier(found, origin);
  }
  for (int64_t v : {0, 1, 2, 3}) add(v, "small", std::to_string(v));
  // The spread: each next size the farthest (log2) from every size before it, so that a few
  // cases reach across the domain; the seed breaks near-ties.
  // (Up to typical_max, as the random family: the long family reaches the domain's max.)
  const int64_t top =
      domain.typical_max > 0 ? std::min(domain.typical_max, domain.max) : domain.max;
  std::vector<int64_t> pool;
  for (int64_t v : spread_candidates(domain, all_tile_sizes(traits)))
    if (v >= domain.min && v <= top && v % step == 0 && !taken.count(v)) pool.push_back(v);
  Rng rng(derive_seed(seed, "ragged/spread", 0));
  std::vector<double> jitter(pool.size());
  for (auto& j : jitter) j = 0.05 * rng.uniform();
  const auto lg = [](int64_t v) { return std::log2(static_cast<double>(v) + 1.0); };
  std::vector<double> nearest(pool.size(), 1e300);
  for (size_t i = 0; i < pool.size(); ++i)
    for (int64_t t : taken) nearest[i] = std::min(nearest[i], std::abs(lg(pool[i]) - lg(t)));
  std::vector<bool> used(pool.size(), false);
  for (size_t n = 0; n < pool.size(); ++n) {
    size_t best = pool.size();
    for (size_t i = 0; i < pool.size(); ++i)
      if (!used[i] &&
          (best == pool.size() || nearest[i] + jitter[i] > nearest[best] + jitter[best]))
        best = i;
    used[best] = true;
    add(pool[best], "spread", spread_detail(pool[best]));
    for (size_t i = 0; i < pool.size(); ++i)
      nearest[i] = std::min(nearest[i], std::abs(lg(pool[i]) - lg(pool[best])));
  }
  if (out.empty()) out.push_back({to_multiple(domain, domain.min), "small", "the domain's min"});
  return out;
}

std::optional<Case> probe_case(const OpSignature& op, const KernelTraits& traits, uint64_t seed) {
  const std::string es = edge_symbol(op);
  const auto dtypes = supported_dtypes(op, traits);
  if (es.empty() || dtypes.empty()) return std::nullopt;
  Case c = base_case(op, dtypes.front(), derive_seed(seed, op.name + "/probe", 0), "probe");
  c.values = Values::normal;
  const SymbolDomain& d = *op.symbol(es);
  for (int64_t others : {3, 2, 4, 1, 5, 6, 8}) {
    for (auto& [name, v] : c.dims) {
      const SymbolDomain& s = *op.symbol(name);
      v = name == es
              ? to_multiple(s, std::clamp<int64_t>(16381, std::max<int64_t>(s.min, 1), s.max))
              : to_multiple(s, std::clamp<int64_t>(others, std::max<int64_t>(s.min, 1), s.max));
    }
    if (in_domain(op, c) && c.dim(es) <= d.max) return c;
  }
  return std::nullopt;
}

int64_t tile_edge_count(const std::vector<Edge>& edges) {
  int64_t n = 0;
  for (const auto& e : edges)
    if (e.origin == "declared" || e.origin == "manifest" || e.origin == "observed") ++n;
  return n;
}

EdgeCoverage edge_coverage(const OpSignature& op, const KernelTraits& traits, uint64_t seed,
                           const std::vector<Case>& cases) {
  EdgeCoverage out;
  out.symbol = edge_symbol(op);
  const SymbolDomain* d = out.symbol.empty() ? nullptr : op.symbol(out.symbol);
  if (!d) {
    out.symbol.clear();
    return out;
  }
  std::map<int64_t, std::set<DType>> reached;
  for (const auto& c : cases)
    for (const auto& [name, v] : c.dims)
      if (name == out.symbol) reached[v].insert(c.dtype);
  for (const auto& e : ragged_edges(*d, traits, seed)) {
    const auto it = reached.find(e.size);
    if (e.origin == "spread") {
      ++out.spread_total;
      if (it != reached.end()) ++out.spread_tried;
    } else if (it == reached.end()) {
      out.left_out.push_back(e);
    } else {
      out.tried.push_back({e, {it->second.begin(), it->second.end()}});
    }
  }
  return out;
}

std::vector<int64_t> long_sizes(const SymbolDomain& domain,
                                const std::vector<int64_t>& tile_sizes) {
  const int64_t typical =
      domain.typical_max > 0 ? std::min(domain.typical_max, domain.max) : domain.max;
  const int64_t step = std::max<int64_t>(1, domain.multiple_of);
  std::set<int64_t, std::greater<>> s;
  auto add_with_below = [&](int64_t v) {
    v = to_multiple(domain, std::min(v, domain.max));
    for (int64_t x : {v, v - step})
      if (x > typical && x >= domain.min && x <= domain.max) s.insert(x);
  };
  add_with_below(domain.max);
  for (int64_t t : tile_sizes)
    if (t > typical && t <= domain.max) add_with_below(t);
  return {s.begin(), s.end()};
}

int64_t long_case_count(const OpSignature& op, const KernelTraits& traits) {
  const SymbolDomain* d = op.reduced_symbol.empty() ? nullptr : op.symbol(op.reduced_symbol);
  if (!d) return 0;
  return static_cast<int64_t>(long_sizes(*d, all_tile_sizes(traits)).size() * 3 *
                              supported_dtypes(op, traits).size());
}

std::vector<std::string> applicable_families(const OpSignature& op, const KernelTraits& traits) {
  std::vector<std::string> out = {"random", "ragged", "extreme"};
  if (op.nan_contract == NanContract::propagate) out.push_back("special");
  out.push_back(
      "layout");  // offset16 for every kernel; more for those that accept strided / unaligned
  if (long_case_count(op, traits) > 0) out.push_back("long");
  if (traits.huge && huge_case(op, traits, 0)) out.push_back("huge");
  return out;
}

std::vector<Case> generate_family(const OpSignature& op, const KernelTraits& traits,
                                  const std::string& family, int64_t count, uint64_t seed,
                                  int64_t max_elements) {
  const auto dtypes = supported_dtypes(op, traits);
  if (dtypes.empty()) return {};
  if (family == "huge") {  // one case: its memory, not its count, is the cost
    auto c = count > 0 ? huge_case(op, traits, seed) : std::nullopt;
    return c ? std::vector<Case>{*c} : std::vector<Case>{};
  }
  std::vector<Case> out;
  if (family == "long") {
    // Case i: row length, values and dtype from the list, values fastest, then dtypes, then
    // lengths (the domain's max first), so that a few cases still reach the longest rows.
    const SymbolDomain* reduced =
        op.reduced_symbol.empty() ? nullptr : op.symbol(op.reduced_symbol);
    const auto lengths =
        reduced ? long_sizes(*reduced, all_tile_sizes(traits)) : std::vector<int64_t>{};
    if (lengths.empty()) return {};
    // Large-mean and constant rows, and normal ones: a long softmax row of the first two is ~1/N
    // everywhere, under an f32 atol, where a kernel writing zeros would pass.
    const Values values[] = {Values::large_mean, Values::all_equal, Values::normal};
    for (int64_t i = 0; i < count; ++i) {
      const uint64_t case_seed = derive_seed(seed, op.name + "/long", static_cast<uint64_t>(i));
      Rng rng(case_seed);
      const size_t n = static_cast<size_t>(i);
      const DType dtype = dtypes[(n / 3) % dtypes.size()];
      Case c = base_case(op, dtype, case_seed, family);
      c.values = values[n % 3];
      const int64_t length = lengths[(n / (3 * dtypes.size())) % lengths.size()];
      // The other symbols small (1 to 5): the long rows are what the family is for, and they cost.
      auto draw_others = [&] {
        for (auto& [name, v] : c.dims) {
          const SymbolDomain* d = op.symbol(name);
          v = name == op.reduced_symbol
                  ? length
                  : to_multiple(*d, std::clamp<int64_t>(rng.uniform_int(1, 5),
                                                        std::max<int64_t>(d->min, 1), d->max));
        }
      };
      draw_others();
      for (int tries = 0; !in_domain(op, c) && tries < 200; ++tries) draw_others();
      if (!in_domain(op, c)) continue;  // no small shape holds this length (the relations say so)
      // Too large for memory: the other symbols shrink first, then the case is left out (a long
      // row is what it is for).
      fit_size(c, op, max_elements);
      if (c.dim(op.reduced_symbol) != length || !in_domain(op, c)) continue;
      out.push_back(std::move(c));
    }
    return out;
  }
  // The ragged family: case i takes edge i on the edge symbol, its dtype rotating (a second pass
  // over the edges gives each another dtype).
  const std::string edge_name = family == "ragged" ? edge_symbol(op) : "";
  const std::vector<Edge> edges =
      edge_name.empty() ? std::vector<Edge>{} : ragged_edges(*op.symbol(edge_name), traits, seed);
  for (int64_t i = 0; i < count; ++i) {
    const uint64_t case_seed = derive_seed(seed, op.name + "/" + family, static_cast<uint64_t>(i));
    Rng rng(case_seed);
    const size_t n = static_cast<size_t>(i);
    const DType dtype =
        edges.empty() ? dtypes[n % dtypes.size()] : dtypes[(n + n / edges.size()) % dtypes.size()];
    Case c = base_case(op, dtype, case_seed, family);
    for (auto& [name, v] : c.dims) {
      const SymbolDomain* d = op.symbol(name);
      const int64_t hi = d->typical_max > 0 ? std::min(d->typical_max, d->max) : d->max;
      v = to_multiple(*d, log_uniform(rng, std::max<int64_t>(d->min, 1), hi));
    }
    if (family == "random") {
      c.values = rng.coin() ? Values::normal : Values::uniform;
    } else if (family == "ragged") {
      // Every symbol ragged; the edge symbol walks the edges (tiles first), the others small.
      for (auto& [name, v] : c.dims) {
        const SymbolDomain* d = op.symbol(name);
        const auto sizes = ragged_sizes(*d, {});
        if (name == edge_name) {
          v = edges[n % edges.size()].size;
        } else {
          // Other symbols small and ragged, so long rows still fit.
          std::vector<int64_t> small;
          for (int64_t s : sizes)
            if (s <= 65) small.push_back(s);
          v = small.empty() ? d->min
                            : small[static_cast<size_t>(
                                  rng.uniform_int(0, static_cast<int64_t>(small.size()) - 1))];
        }
      }
      c.values = Values::normal;
    } else if (family == "extreme") {
      c.values = pick(rng, {Values::extreme, Values::tiny, Values::large_mean, Values::all_equal,
                            Values::clustered_max, Values::pm_pairs});
    } else if (family == "special") {
      c.values = Values::special;
    } else if (family == "layout") {
      std::vector<Layout> layouts;
      // Every kernel takes a contiguous tensor that is 16-byte aligned but not 256-byte aligned
      // (a slice x[1:]); row-padded views are strided ones with a unit-stride last dim.
      if (traits.accepts_strided) layouts.push_back(Layout::strided);
      if (traits.accepts_unaligned) layouts.push_back(Layout::offset);
      if (traits.accepts_strided) layouts.push_back(Layout::padded);
      layouts.push_back(Layout::offset16);
      c.layout = layouts[static_cast<size_t>(i) % layouts.size()];
      c.values = Values::normal;
    } else {
      throw_usage("unknown case family '" + family +
                  "': expected random, ragged, extreme, special, layout, long or huge");
    }
    // A ragged case is about its edge: at most 2^16 elements, the other symbols shrinking first
    // (an edge past that keeps one row).
    const int64_t limit =
        family == "ragged" ? std::min<int64_t>(max_elements, int64_t{1} << 16) : max_elements;
    fit_size(c, op, limit);
    for (auto& [name, v] : c.dims) v = to_multiple(*op.symbol(name), v);
    // Relations between symbols: redraw the shape (same family, values and layout) until they
    // hold; ops whose relation is rare say it with a product instead ("C": "G*CG"). A ragged
    // case keeps its edge while the other symbols are redrawn, for its first 100 tries.
    for (int tries = 0; !in_domain(op, c); ++tries) {
      if (tries == 200)
        throw_usage("op '" + op.name +
                    "': no shape satisfying its relations was drawn in 200 tries (" + c.id() +
                    "); write a rare relation as a product of symbols (\"shape\": [\"G*CG\"])");
      for (auto& [name, v] : c.dims) {
        if (name == edge_name && tries < 100) continue;
        const SymbolDomain* d = op.symbol(name);
        const int64_t hi = d->typical_max > 0 ? std::min(d->typical_max, d->max) : d->max;
        v = to_multiple(*d, log_uniform(rng, std::max<int64_t>(d->min, 1),
                                        family == "ragged" ? std::min<int64_t>(hi, 65) : hi));
      }
      fit_size(c, op, limit);
      for (auto& [name, v] : c.dims) v = to_multiple(*op.symbol(name), v);
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<Case> generate_cases(const OpSignature& op, const KernelTraits& traits,
                                 const GeneratorOptions& options) {
  for (const auto& f : options.families)
    if (f != "huge" &&
        std::find(all_families().begin(), all_families().end(), f) == all_families().end())
      throw_usage("unknown case family '" + f +
                  "': expected random, ragged, extreme, special, layout, long or huge");
  auto families = options.families.empty() ? applicable_families(op, traits) : options.families;
  const auto applicable = applicable_families(op, traits);
  families.erase(std::remove_if(families.begin(), families.end(),
                                [&](const std::string& f) {
                                  return std::find(applicable.begin(), applicable.end(), f) ==
                                         applicable.end();
                                }),
                 families.end());
  if (families.empty()) return {};
  // The huge family is one case, last (it takes the budget of one).
  std::vector<Case> huge;
  if (auto it = std::find(families.begin(), families.end(), "huge"); it != families.end()) {
    families.erase(it);
    if (options.cases >= 2 || families.empty())
      huge = generate_family(op, traits, "huge", 1, options.seed);
  }
  GeneratorOptions rest = options;
  rest.cases -= static_cast<int64_t>(huge.size());
  // The long family: its whole list when the budget holds twice as many cases, else a
  // quarter of the budget (at least one), also taken off the top.
  std::vector<Case> long_rows;
  if (auto it = std::find(families.begin(), families.end(), "long"); it != families.end()) {
    families.erase(it);
    const int64_t all = long_case_count(op, traits);
    const int64_t n =
        families.empty()
            ? rest.cases
            : std::min(all, std::max<int64_t>(1, rest.cases >= 2 * all ? all : rest.cases / 4));
    if (rest.cases > 0)
      long_rows = generate_family(op, traits, "long", n, options.seed, options.max_elements);
    rest.cases -= static_cast<int64_t>(long_rows.size());
  }
  if (families.empty()) {
    long_rows.insert(long_rows.end(), huge.begin(), huge.end());
    return long_rows;
  }
  // Weights: random and ragged carry most of the budget; each family gets at least one case.
  std::vector<double> weight;
  for (const auto& f : families)
    weight.push_back(f == "random" ? 4 : f == "ragged" ? 3 : f == "extreme" ? 1.5 : 1);
  double total = 0;
  for (double w : weight) total += w;
  // The ragged family's share grows to reach every tile edge (declared, manifest, observed), up to
  // half of the budget; the other families share what is left by their weights.
  std::vector<int64_t> count(families.size(), 0);
  int64_t budget = rest.cases;
  double others = total;
  if (auto it = std::find(families.begin(), families.end(), "ragged");
      it != families.end() && families.size() > 1) {
    const size_t r = static_cast<size_t>(it - families.begin());
    const std::string es = edge_symbol(op);
    const int64_t edges =
        es.empty() ? 0 : tile_edge_count(ragged_edges(*op.symbol(es), traits, options.seed));
    const int64_t share =
        std::max<int64_t>(1, static_cast<int64_t>(std::floor(rest.cases * weight[r] / total)));
    count[r] = std::max<int64_t>(
        0, std::min(rest.cases, std::max(share, std::min(edges, rest.cases / 2))));
    budget -= count[r];
    others -= weight[r];
    weight[r] = 0;
  }
  int64_t assigned = 0;
  size_t last = families.size();
  for (size_t i = 0; i < families.size(); ++i)
    if (weight[i] > 0) last = i;
  for (size_t i = 0; i < families.size(); ++i) {
    if (weight[i] == 0) continue;
    int64_t n = i == last ? budget - assigned
                          : std::max<int64_t>(
                                1, static_cast<int64_t>(std::floor(budget * weight[i] / others)));
    n = std::max<int64_t>(0, std::min(n, budget - assigned));
    assigned += n;
    count[i] = n;
  }
  std::vector<Case> out;
  for (size_t i = 0; i < families.size(); ++i) {
    auto cases =
        generate_family(op, traits, families[i], count[i], options.seed, options.max_elements);
    out.insert(out.end(), cases.begin(), cases.end());
  }
  out.insert(out.end(), long_rows.begin(), long_rows.end());
  out.insert(out.end(), huge.begin(), huge.end());
  return out;
}

}  // namespace kgate::props
