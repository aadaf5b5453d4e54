// kgate list: the registered kernels (--all: mutants and controls too) or the ops (--ops).
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include <algorithm>

#include "cli/output.hpp"
#include "core/error.hpp"
#include "gates/props/generators.hpp"
#include "references/catalogue.hpp"
#include "report/text.hpp"
#include "runtime/kernel.hpp"
#include "runtime/pipeline.hpp"

namespace kgate::cli {

CLI::App* add_list_command(CLI::App& app, ListArgs& args) {
  auto* cmd =
      app.add_subcommand("list", "List the kernels under test (or the op catalogue with --ops)");
  cmd->add_flag("--ops", args.ops, "List the op catalogue, one op per line");
  cmd->add_flag("--all", args.all, "Include the mutants (deliberately broken kernels)");
  cmd->add_option(
         "--cases", args.cases,
         "List each kernel's correctness cases as `kgate check --cases N` makes them (no GPU "
         "needed), and the edges they reach and leave out")
      ->check(above_zero());
  cmd->add_option("--kernel", args.kernels, "With --cases: only this kernel (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--seed", args.seed, "With --cases: the master seed (as kgate check's)")
      ->capture_default_str();
  add_family_option(*cmd, args.families, check_families(),
                    "With --cases: case families (as kgate check's)");
  cmd->add_option("--config", args.config_path,
                  "A kgate-config/1 file: its op files, torch libraries and torch ops are loaded "
                  "and bound as kgate check --config does (no GPU needed), and listed")
      ->check(CLI::ExistingFile);
  return cmd;
}

namespace {

// The cases kgate check makes for a CMake kernel or torch op (as validate --cases lists a
// package's), and the edges they reach.
int list_cases(const ListArgs& args) {
  const CheckOptions options = listing_options(args.seed, args.cases, args.families, "");
  for (const auto& k : registered_kernels()) {
    const bool named =
        std::find(args.kernels.begin(), args.kernels.end(), k.name) != args.kernels.end();
    if (args.kernels.empty() ? k.mutant && !args.all : !named) continue;
    const OpSignature& op = find_op(k.op);
    const auto traits = traits_of(k);
    const std::vector<Case> cases = correctness_cases(k, options);
    std::printf("cases of %s (kgate check --kernel %s --seed %llu --cases %lld): %zu\n",
                k.name.c_str(), k.name.c_str(), static_cast<unsigned long long>(args.seed),
                static_cast<long long>(args.cases), cases.size());
    for (const auto& c : cases)
      std::printf("  %s  %s\n", c.id().c_str(), c.family.empty() ? "-" : c.family.c_str());
    const auto cov = props::edge_coverage(op, traits, args.seed, cases);
    if (cov.symbol.empty()) continue;
    std::string tried, left;
    for (const auto& r : cov.tried)
      tried +=
          (tried.empty() ? "" : ", ") + std::to_string(r.edge.size) + " (" + r.edge.detail + ")";
    for (const auto& e : cov.left_out)
      left += (left.empty() ? "" : ", ") + std::to_string(e.size) + " (" + e.detail + ")";
    std::printf("  edges of %s tried: %s\n", cov.symbol.c_str(),
                tried.empty() ? "none" : tried.c_str());
    if (!left.empty())
      std::printf("  edges of %s left out for budget: %s\n", cov.symbol.c_str(), left.c_str());
    std::printf("  spread sizes of %s tried: %lld of %lld\n", cov.symbol.c_str(),
                static_cast<long long>(cov.spread_tried), static_cast<long long>(cov.spread_total));
    if (k.backend == Backend::cuda && k.tile_sizes.empty() && k.found_sizes.empty())
      std::printf(
          "  (no tile sizes declared: kgate check on a GPU adds those its launches show on a probe "
          "case, recorded in report.json's correctness.coverage)\n");
  }
  return 0;
}

}  // namespace

int run_list(const ListArgs& args) {
  for (const auto& k : args.kernels)
    find_kernel(k);  // an unknown name: a usage error, listing them
  if (args.cases > 0) return list_cases(args);
  if (!args.kernels.empty() || !args.families.empty())
    throw_usage("kgate list: --kernel and --family go with --cases N");
  if (args.ops) {
    // One op per line: name, signature, case dtypes, where it is defined.
    const auto tensors = [](const std::vector<TensorSpec>& ts) {
      std::string out;
      for (const auto& t : ts) {
        std::string shape;
        for (const auto& d : t.shape) shape += (shape.empty() ? "" : ",") + d;
        out += (out.empty() ? "" : ", ") + t.name + "[" + shape + "]" +
               (t.dtype.empty() ? "" : ":" + t.dtype);
      }
      return out;
    };
    std::vector<std::vector<std::string>> rows = {{"op", "signature", "dtypes", "defined by"}};
    for (const auto& op : op_catalogue()) {
      std::string dtypes;
      for (DType d : op.dtypes) dtypes += (dtypes.empty() ? "" : ",") + std::string(dtype_name(d));
      rows.push_back({op.name, "(" + tensors(op.inputs) + ") -> (" + tensors(op.outputs) + ")",
                      dtypes, op.origin});
    }
    const auto widths = column_widths(rows);
    for (const auto& r : rows) std::printf("%s\n", aligned_row(r, widths).c_str());
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"kernel", "op", "backend", "dtypes", "source"}};
  for (const auto& k : registered_kernels()) {
    if (k.mutant && !args.all) continue;
    std::string dtypes;
    for (DType d : k.dtypes) dtypes += (dtypes.empty() ? "" : ",") + std::string(dtype_name(d));
    rows.push_back({k.name, k.op, backend_name(k.backend), dtypes,
                    k.source + (k.control  ? "  (control: must pass)"
                                : k.mutant ? "  (mutant: must be rejected)"
                                           : "")});
  }
  const auto widths = column_widths(rows);
  for (const auto& r : rows) std::printf("%s\n", aligned_row(r, widths).c_str());
  return 0;
}

}  // namespace kgate::cli
