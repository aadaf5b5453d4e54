// kgate list: the registered kernels (--all: mutants and controls too) or the ops (--ops).
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/output.hpp"
#include "references/catalogue.hpp"
#include "report/text.hpp"
#include "runtime/kernel.hpp"

namespace kgate::cli {

CLI::App* add_list_command(CLI::App& app, ListArgs& args) {
  auto* cmd = app.add_subcommand("list", "List the kernels under test (or the op catalogue with --ops)");
  cmd->add_flag("--ops", args.ops, "List the op catalogue, one op per line");
  cmd->add_flag("--all", args.all, "Include the mutants (deliberately broken kernels)");
  return cmd;
}

int run_list(const ListArgs& args) {
  if (args.ops) {
    // One op per line: name, signature, case dtypes, where it is defined.
    const auto tensors = [](const std::vector<TensorSpec>& ts) {
      std::string out;
      for (const auto& t : ts) {
        std::string shape;
        for (const auto& d : t.shape) shape += (shape.empty() ? "" : ",") + d;
        out += (out.empty() ? "" : ", ") + t.name + "[" + shape + "]" + (t.dtype.empty() ? "" : ":" + t.dtype);
      }
      return out;
    };
    std::vector<std::vector<std::string>> rows = {{"op", "signature", "dtypes", "defined by"}};
    for (const auto& op : op_catalogue()) {
      std::string dtypes;
      for (DType d : op.dtypes) dtypes += (dtypes.empty() ? "" : ",") + std::string(dtype_name(d));
      rows.push_back({op.name, "(" + tensors(op.inputs) + ") -> (" + tensors(op.outputs) + ")", dtypes, op.origin});
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
