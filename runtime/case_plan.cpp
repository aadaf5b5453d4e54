// The case lists of a kernel's check (case_plan.hpp).
#include "runtime/case_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "core/captured.hpp"
#include "core/cost.hpp"
#include "core/rng.hpp"
#include "core/safetensors.hpp"
#include "gates/props/guard_cases.hpp"
#include "gates/props/tile_inference.hpp"
#include "references/catalogue.hpp"

namespace kgate {

// A contract's boundary cases stay small: both sides of a relation need no large tensor.
constexpr int64_t kMaxContractCaseElements = int64_t{1} << 20;

std::vector<Case> captured_cases(const OpSignature& op, const std::vector<CapturedFile>& files,
                                 uint64_t seed, const std::string& kernel) {
  std::vector<Case> cases;
  for (const auto& f : files) {
    const auto header = read_safetensors_header(f.path);
    const auto named = header.metadata.find("op");
    if (named != header.metadata.end() && named->second != op.name) continue;
    try {
      cases.push_back(
          captured_case(op, f.name, f.path, derive_seed(seed, "captured/" + f.name, 0)));
    } catch (const Error& e) {
      throw Error(
          e.kind(),
          std::string(e.what()) + " (checking kernel " + kernel + " of op " + op.name +
              (named == header.metadata.end()
                   ? "; a file whose __metadata__ has \"op\" applies to that op's kernels only)"
                   : ")"));
    }
  }
  return cases;
}

void resolve_captured(Case& c, const std::vector<CapturedFile>& files) {
  if (c.values != Values::captured) return;
  for (const auto& f : files)
    if (f.name == c.captured) c.captured_path = f.path;
}

props::KernelTraits traits_of(const KernelInfo& kernel) {
  props::KernelTraits t;
  t.dtypes = kernel.dtypes;
  t.tile_sizes = kernel.tile_sizes;
  t.found_sizes = kernel.found_sizes;
  t.accepts_strided = kernel.accepts_strided;
  t.accepts_unaligned = kernel.accepts_unaligned;
  t.huge = kernel.backend == Backend::cuda;
  return t;
}

std::vector<Case> speed_cases(const OpSignature& op, const KernelInfo& kernel, uint64_t seed,
                              int64_t count) {
  // Row lengths from short to long; the other symbols fill about 4M elements.
  const int64_t rows[] = {1024, 4096, 32768, 256, 16384};
  std::vector<DType> dtypes;
  for (DType d : op.dtypes)
    if (kernel.dtypes.empty() ||
        std::find(kernel.dtypes.begin(), kernel.dtypes.end(), d) != kernel.dtypes.end())
      dtypes.push_back(d);
  std::vector<Case> out;
  for (int64_t i = 0; i < count && !dtypes.empty(); ++i) {
    Case c;
    c.op = op.name;
    c.dtype = dtypes[static_cast<size_t>(i) % dtypes.size()];
    c.seed = derive_seed(seed, "speed/" + op.name, static_cast<uint64_t>(i));
    c.family = "speed";
    // The op's own speed shapes when it declares them (an op file's speed_shapes), in turn.
    if (!op.speed_shapes.empty()) {
      c.dims = op.speed_shapes[static_cast<size_t>(i) % op.speed_shapes.size()];
      out.push_back(std::move(c));
      continue;
    }
    const int64_t n = rows[i % 5];
    int64_t others = 1;
    for (const auto& s : op.symbols)
      if (s.name != op.reduced_symbol) ++others;
    for (const auto& s : op.symbols) {
      int64_t v;
      if (s.name == op.reduced_symbol) {
        v = std::clamp<int64_t>(n, s.min, s.max);
      } else {
        const double target = std::pow(4.0 * 1024 * 1024 / static_cast<double>(n),
                                       1.0 / static_cast<double>(others - 1));
        v = std::clamp<int64_t>(static_cast<int64_t>(target), std::max<int64_t>(s.min, 1), s.max);
      }
      c.dims.emplace_back(s.name, v);
    }
    out.push_back(std::move(c));
  }
  return out;
}

TileProbe probe_tiles(Runner& runner, const KernelInfo& kernel, const OpSignature& op,
                      const CheckOptions& options, uint64_t seed) {
  const cost::Scope probing("probe");
  TileProbe p;
  if (options.observed_sizes) {
    p.sizes = *options.observed_sizes;
    p.note = "as the first worker observed them";
    return p;
  }
  // Every CUDA kernel that declares no tile: a CMake kernel, a torch op, a package (whose manifest
  // may say where it switches, but not how a block walks a row).
  if (runner.backend() != Backend::cuda || !kernel.tile_sizes.empty() ||
      !options.only_cases.empty() || options.worker.resume_at > 0 ||
      std::getenv("KGATE_UNDER_SANITIZER"))
    return p;
  const auto c = props::probe_case(op, traits_of(kernel), seed);
  if (!c) {
    p.note = "no probe case: the op has no edge symbol or no small shape in its domain";
    return p;
  }
  p.case_id = c->id();
  const cuda::LaunchRecord r = runner.record_launches(kernel, *c);
  if (runner.context_lost()) {
    CaseResult f;
    f.kcase = *c;
    f.outcome = Outcome::failed;
    f.rule = Reason::fault;
    f.message = "kernel '" + kernel.name + "' faulted on the case that probes its tiles: " + r.why;
    f.repro = repro_command(kernel, *c);
    p.fault = f;
    p.note = r.why;
    return p;
  }
  if (r.launches.size() == 1 && r.launches[0] == "outside the guard") {
    p.note = "the probe case is outside the kernel's guard";
    return p;
  }
  const std::string es = props::edge_symbol(op);
  const int64_t n = std::max<int64_t>(1, c->dim(es));
  const int64_t rows = std::max<int64_t>(1, props::largest_tensor_numel(op, *c) / n);
  std::string why;
  p.sizes = props::infer_tiles(props::launch_shapes(r.launches), rows, n, &why);
  if (p.sizes.empty())
    p.note = "no tile inferred from its launches" + (why.empty() ? std::string() : ": " + why) +
             (r.known || r.why.empty() ? "" : " (" + r.why + ")");
  return p;
}

// report.json's correctness.coverage: the edge symbol, the edges tried (with their dtypes) and
// left out, the spread's count, and the sizes found (declared, manifest, observed) with where.
nlohmann::json coverage_json(const props::EdgeCoverage& cov, const props::KernelTraits& traits,
                             const TileProbe& probe) {
  const auto edge = [](const props::Edge& e) {
    return nlohmann::json{{"size", e.size}, {"origin", e.origin}, {"detail", e.detail}};
  };
  nlohmann::json tried = nlohmann::json::array(), left = nlohmann::json::array();
  for (const auto& r : cov.tried) {
    auto j = edge(r.edge);
    j["dtypes"] = nlohmann::json::array();
    for (DType d : r.dtypes) j["dtypes"].push_back(dtype_name(d));
    tried.push_back(std::move(j));
  }
  for (const auto& e : cov.left_out) left.push_back(edge(e));
  nlohmann::json sizes = nlohmann::json::array();
  for (int64_t t : traits.tile_sizes)
    sizes.push_back({{"size", t}, {"origin", "declared"}, {"detail", "tile " + std::to_string(t)}});
  for (const auto& f : traits.found_sizes)
    sizes.push_back({{"size", f.size}, {"origin", f.origin}, {"detail", f.detail}});
  return {{"symbol", cov.symbol},
          {"tile_sizes", std::move(sizes)},
          {"tried", std::move(tried)},
          {"left_out", std::move(left)},
          {"spread", {{"tried", cov.spread_tried}, {"total", cov.spread_total}}},
          {"probe", probe.case_id.empty() && probe.note.empty()
                        ? nlohmann::json()
                        : nlohmann::json{{"case", probe.case_id}, {"note", probe.note}}}};
}

// A package's launches that none of `cases` runs, each given a case that runs it where one is
// found: the edge symbol at each of its ragged sizes (those the budget left out too), then at the
// multiples of 8 to 256 next to them, the other symbols as in a generated case (at their smallest
// where that passes the ragged cap), each dtype of the kernel, contiguous then offset. Family
// "ragged"; at most one case per launch.
std::vector<Case> launch_reaching_cases(const KernelInfo& kernel, const OpSignature& op,
                                        const props::KernelTraits& traits,
                                        const std::vector<Case>& cases, uint64_t seed) {
  std::vector<Case> out;
  if (!kernel.case_launches || kernel.launch_fields.empty() || cases.empty()) return out;
  const auto runs = [&](const Case& c, const std::string& field) {
    try {
      for (const auto& line : kernel.case_launches(c))
        if (line.rfind(field + " ", 0) == 0) return true;
    } catch (const std::exception&) {
    }
    return false;
  };
  std::vector<std::string> missing;
  for (const auto& field : kernel.launch_fields)
    if (std::none_of(cases.begin(), cases.end(), [&](const Case& c) { return runs(c, field); }))
      missing.push_back(field);
  const std::string symbol = props::edge_symbol(op);
  const SymbolDomain* domain = symbol.empty() ? nullptr : op.symbol(symbol);
  if (missing.empty() || !domain) return out;
  std::vector<int64_t> sizes;
  std::set<int64_t> seen;
  const auto add_size = [&](int64_t v) {
    if (v >= std::max<int64_t>(domain->min, 1) && v <= domain->max && seen.insert(v).second)
      sizes.push_back(v);
  };
  const auto edges = props::ragged_edges(*domain, traits, seed);
  for (const auto& e : edges) add_size(e.size);
  for (const auto& e : edges)
    for (int64_t m : {8, 16, 32, 64, 128, 256}) {
      add_size(e.size / m * m);
      add_size((e.size / m + 1) * m);
    }
  // The other symbols: as in the first generated case, else at their smallest.
  std::map<std::string, int64_t> base(cases.front().dims.begin(), cases.front().dims.end());
  const auto numel_ok = [&](const Case& c) {
    return props::largest_tensor_numel(op, c) <= (int64_t{1} << 16);  // a ragged case's cap
  };
  uint64_t index = 0;
  for (const auto& field : missing) {
    bool found = false;
    for (int64_t v : sizes) {
      for (DType dtype : kernel.dtypes) {
        for (Layout layout : {Layout::contiguous, Layout::offset}) {
          std::map<std::string, int64_t> dims = base;
          dims[symbol] = v;
          Case c = props::case_of(op, dtype, dims, layout,
                                  derive_seed(seed, "launch/" + field, index++));
          if (!numel_ok(c)) {
            for (auto& [name, value] : dims)
              if (name != symbol && op.symbol(name))
                value = std::max<int64_t>(op.symbol(name)->min, 1);
            c = props::case_of(op, dtype, dims, layout,
                               derive_seed(seed, "launch/" + field, index++));
            if (!numel_ok(c)) continue;
          }
          if (!runs(c, field)) continue;
          c.family = "ragged";
          out.push_back(std::move(c));
          found = true;
          break;
        }
        if (found) break;
      }
      if (found) break;
    }
  }
  return out;
}

// The correctness cases of `kernel` (of `op`), generated as `gen` says.
std::vector<Case> cases_of(const KernelInfo& kernel, const OpSignature& op,
                           const props::KernelTraits& traits, const props::GeneratorOptions& gen,
                           const CheckOptions& options) {
  const cost::Scope generating("generate");
  auto cases =
      options.only_cases.empty() ? props::generate_cases(op, traits, gen) : options.only_cases;
  if (options.only_cases.empty()) {
    // A launch of a package that no generated case runs gets a ragged case that does.
    if (gen.families.empty() ||
        std::find(gen.families.begin(), gen.families.end(), "ragged") != gen.families.end()) {
      const auto reaching = launch_reaching_cases(kernel, op, traits, cases, gen.seed);
      cases.insert(cases.end(), reaching.begin(), reaching.end());
    }
    const auto added = guard_and_extra_cases(kernel, options);
    cases.insert(cases.end(), added.begin(), added.end());
    const auto captured = captured_cases(op, options.captured, gen.seed, kernel.name);
    cases.insert(cases.end(), captured.begin(), captured.end());
  }
  for (auto& c : cases) resolve_captured(c, options.captured);
  return cases;
}

std::vector<Case> guard_and_extra_cases(const KernelInfo& kernel, const CheckOptions& options) {
  std::vector<Case> out;
  if (kernel.guard_cases) out = kernel.guard_cases(options.seed);
  // Both sides of the kernel's contract: every relation it requires, the dtypes and layouts it
  // leaves out.
  const OpSignature& op = find_op(kernel.op);
  if (const auto& contract = resolve_settings(op, kernel.name, options).gates.contract) {
    for (Case& c : props::guard_boundary_cases(guard_model_of(*contract, op, kernel.name), op,
                                               options.seed, kMaxContractCaseElements)) {
      c.family = c.family == "guard_inside" ? "contract_inside" : "contract_outside";
      out.push_back(std::move(c));
    }
  }
  out.insert(out.end(), options.extra_cases.begin(), options.extra_cases.end());
  return out;
}

std::vector<Case> correctness_cases(const KernelInfo& kernel, const CheckOptions& options) {
  const OpSignature& op = find_op(kernel.op);
  return cases_of(kernel, op, traits_of(kernel), resolve_settings(op, kernel.name, options).cases,
                  options);
}

}  // namespace kgate
