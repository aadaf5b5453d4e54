// Deterministic case generation.
#include "gates/props/generators.hpp"

#include <algorithm>
#include <cmath>
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
    if (traits.dtypes.empty() || std::find(traits.dtypes.begin(), traits.dtypes.end(), d) != traits.dtypes.end())
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

Values pick(Rng& rng, std::initializer_list<Values> choices) {
  std::vector<Values> v(choices);
  return v[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(v.size()) - 1))];
}

}  // namespace

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

namespace {

// The nearest multiple of the symbol's multiple_of at or below v, kept within [min, max].
int64_t to_multiple(const SymbolDomain& d, int64_t v) {
  if (d.multiple_of <= 1) return v;
  int64_t m = v / d.multiple_of * d.multiple_of;
  if (m < d.min) m = (d.min + d.multiple_of - 1) / d.multiple_of * d.multiple_of;
  return m;
}

}  // namespace

std::vector<int64_t> ragged_sizes(const SymbolDomain& domain, const std::vector<int64_t>& tile_sizes) {
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
    if (v >= domain.min && v <= domain.max && (domain.multiple_of <= 1 || v % domain.multiple_of == 0))
      out.push_back(v);
  if (out.empty()) out.push_back(to_multiple(domain, domain.min));
  return out;
}

std::vector<std::string> applicable_families(const OpSignature& op, const KernelTraits& traits) {
  std::vector<std::string> out = {"random", "ragged", "extreme"};
  if (op.nan_contract == NanContract::propagate) out.push_back("special");
  if (traits.accepts_strided || traits.accepts_unaligned) out.push_back("layout");
  return out;
}

std::vector<Case> generate_family(const OpSignature& op, const KernelTraits& traits, const std::string& family,
                                  int64_t count, uint64_t seed, int64_t max_elements) {
  const auto dtypes = supported_dtypes(op, traits);
  if (dtypes.empty()) return {};
  std::vector<Case> out;
  for (int64_t i = 0; i < count; ++i) {
    const uint64_t case_seed = derive_seed(seed, op.name + "/" + family, static_cast<uint64_t>(i));
    Rng rng(case_seed);
    const DType dtype = dtypes[static_cast<size_t>(i) % dtypes.size()];
    Case c = base_case(op, dtype, case_seed, family);
    for (auto& [name, v] : c.dims) {
      const SymbolDomain* d = op.symbol(name);
      const int64_t hi = d->typical_max > 0 ? std::min(d->typical_max, d->max) : d->max;
      v = to_multiple(*d, log_uniform(rng, std::max<int64_t>(d->min, 1), hi));
    }
    if (family == "random") {
      c.values = rng.coin() ? Values::normal : Values::uniform;
    } else if (family == "ragged") {
      // Every symbol ragged; the reduced symbol walks the whole ragged list (tile edges included).
      for (auto& [name, v] : c.dims) {
        const SymbolDomain* d = op.symbol(name);
        const auto sizes = ragged_sizes(*d, traits.tile_sizes);
        if (name == op.reduced_symbol) {
          v = sizes[static_cast<size_t>(i) % sizes.size()];
        } else {
          // Other symbols small and ragged, so long rows still fit.
          std::vector<int64_t> small;
          for (int64_t s : sizes)
            if (s <= 65) small.push_back(s);
          v = small.empty() ? d->min : small[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(small.size()) - 1))];
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
      if (traits.accepts_strided) layouts.push_back(Layout::strided);
      if (traits.accepts_unaligned) layouts.push_back(Layout::offset);
      if (layouts.empty()) return {};
      c.layout = layouts[static_cast<size_t>(i) % layouts.size()];
      c.values = Values::normal;
    } else {
      throw_usage("unknown case family '" + family + "': expected random, ragged, extreme, special or layout");
    }
    fit_size(c, op, max_elements);
    for (auto& [name, v] : c.dims) v = to_multiple(*op.symbol(name), v);
    // Relations between symbols: redraw the shape (same family, values and layout) until they
    // hold; ops whose relation is rare say it with a product instead ("C": "G*CG").
    for (int tries = 0; !in_domain(op, c); ++tries) {
      if (tries == 200)
        throw_usage("op '" + op.name + "': no shape satisfying its relations was drawn in 200 tries (" +
                    c.id() + "); write a rare relation as a product of symbols (\"shape\": [\"G*CG\"])");
      for (auto& [name, v] : c.dims) {
        const SymbolDomain* d = op.symbol(name);
        const int64_t hi = d->typical_max > 0 ? std::min(d->typical_max, d->max) : d->max;
        v = to_multiple(*d, log_uniform(rng, std::max<int64_t>(d->min, 1), family == "ragged" ? std::min<int64_t>(hi, 65) : hi));
      }
      fit_size(c, op, max_elements);
      for (auto& [name, v] : c.dims) v = to_multiple(*op.symbol(name), v);
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<Case> generate_cases(const OpSignature& op, const KernelTraits& traits, const GeneratorOptions& options) {
  auto families = options.families.empty() ? applicable_families(op, traits) : options.families;
  const auto applicable = applicable_families(op, traits);
  families.erase(std::remove_if(families.begin(), families.end(),
                                [&](const std::string& f) {
                                  return std::find(applicable.begin(), applicable.end(), f) == applicable.end();
                                }),
                 families.end());
  if (families.empty()) return {};
  // Weights: random and ragged carry most of the budget; each family gets at least one case.
  std::vector<double> weight;
  for (const auto& f : families)
    weight.push_back(f == "random" ? 4 : f == "ragged" ? 3 : f == "extreme" ? 1.5 : 1);
  double total = 0;
  for (double w : weight) total += w;
  std::vector<Case> out;
  int64_t assigned = 0;
  for (size_t i = 0; i < families.size(); ++i) {
    int64_t n = i + 1 == families.size()
                    ? options.cases - assigned
                    : std::max<int64_t>(1, static_cast<int64_t>(std::floor(options.cases * weight[i] / total)));
    n = std::max<int64_t>(0, std::min(n, options.cases - assigned));
    assigned += n;
    auto cases = generate_family(op, traits, families[i], n, options.seed, options.max_elements);
    out.insert(out.end(), cases.begin(), cases.end());
  }
  return out;
}

}  // namespace kgate::props
