// kgate replay: one case (an id, a case file or a report's minimal case) run again on a kernel.
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/output.hpp"
#include "core/error.hpp"
#include "gates/correctness/rules.hpp"
#include "references/catalogue.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/runner.hpp"

namespace kgate::cli {
namespace fs = std::filesystem;

CLI::App* add_replay_command(CLI::App& app, ReplayArgs& args) {
  auto* cmd =
      app.add_subcommand("replay", "Re-run exactly one case (an id or a JSON file) on one kernel");
  auto* kernel = cmd->add_option("--kernel", args.kernel, "Kernel to run");
  cmd->add_option("--package", args.package_dir, "Package directory to run (instead of --kernel)")
      ->check(CLI::ExistingDirectory)
      ->excludes(kernel);
  cmd->add_option("--arch", args.arch, "NVRTC target for --package (default: the GPU's)");
  cmd->add_option("case", args.case_ref, "Case id (op:dtype:dims:layout:values:seed) or JSON file")
      ->required();
  cmd->add_option("--rule", args.rule, "Correctness rule")
      ->check(CLI::IsMember(kgate::correctness::rule_names()));
  cmd->add_option("--atol", args.atol, "Absolute tolerance")->check(tolerance_value());
  cmd->add_option("--rtol", args.rtol, "Relative tolerance")->check(tolerance_value());
  return cmd;
}

int run_replay(const ReplayArgs& args) {
  Case c;
  if (fs::exists(args.case_ref)) {
    std::ifstream f(args.case_ref);
    nlohmann::json j;
    try {
      f >> j;
    } catch (const std::exception& e) {
      throw_usage(args.case_ref + ": not valid JSON: " + e.what());
    }
    // Accept a bare case, a case result, or a report: the minimal failing case of the kernel
    // replayed (else the report's first one).
    if (j.is_object() && j.contains("kernels") && j.at("kernels").is_array()) {
      const nlohmann::json* found = nullptr;
      for (const auto& k : j.at("kernels")) {
        const auto cr = k.find("correctness");
        if (cr == k.end() || !cr->is_object()) continue;
        const auto m = cr->find("minimal");
        if (m == cr->end() || !m->is_object() || !m->contains("case")) continue;
        const bool named =
            k.value("name", "") == args.kernel || (!args.package_dir.empty() && !found);
        if (named || !found) found = &m->at("case");
        if (named) break;
      }
      if (!found)
        throw_usage(args.case_ref +
                    " holds no failing case to replay (no kernel of it failed); replay a case id "
                    "instead (kgate replay --kernel NAME 'op:dtype:dims:layout:values:seed')");
      j = *found;
    } else if (j.is_object() && j.contains("case")) {
      j = j.at("case");
    }
    try {
      c = j.get<Case>();
    } catch (const nlohmann::json::exception& e) {
      throw_usage(args.case_ref + " is not a case, a case result or a kgate report: " + e.what());
    }
  } else {
    c = Case::from_id(args.case_ref);
  }
  if (args.kernel.empty() == args.package_dir.empty())
    throw_usage("replay needs exactly one of --kernel NAME and --package DIR");
  std::optional<LoadedPackage> package;
  if (!args.package_dir.empty()) {
    std::string why;
    const std::string arch = !args.arch.empty()             ? args.arch
                             : cuda::device_available(&why) ? device_arch()
                                                            : std::string("sm_90");
    package = load_package(args.package_dir, arch, true);
    if (!package) return static_cast<int>(ExitCode::usage);
  }
  const KernelInfo& kernel = package ? package->kernel : find_kernel(args.kernel);
  if (kernel.op != c.op)
    throw_usage("case " + c.id() + " is for op '" + c.op + "' but kernel '" + kernel.name +
                "' implements '" + kernel.op + "'");
  // A package's captured inputs are named relative to it; others, as given (from the directory
  // kgate check ran in).
  if (c.values == Values::captured && package) {
    if (std::find(package->manifest.captured_inputs.begin(),
                  package->manifest.captured_inputs.end(),
                  c.captured) == package->manifest.captured_inputs.end())
      throw_usage("case " + c.id() + " reads captured inputs '" + c.captured + "', which package " +
                  package->manifest.name + " does not list in captured_inputs");
    c.captured_path = (package->manifest.dir / c.captured).string();
  }
  Runner runner(kernel.backend);
  CheckOptions options;
  options.rule = args.rule;
  options.atol = args.atol;
  options.rtol = args.rtol;
  const auto rule = rule_for(find_op(c.op), c.dtype, options);
  const auto result = runner.check_case(kernel, c, rule);
  std::printf(
      "%s %s on %s\n  rule %s: observed %.6g, allowed %.6g, margin %.4f\n  max abs err vs "
      "reference %.6g, vs fp64 oracle %.6g (reference's own: %.6g)\n",
      outcome_name(result.outcome), kernel.name.c_str(), c.id().c_str(), reason_name(result.rule),
      result.observed, result.allowed, result.margin, result.vs_reference.max_abs,
      result.vs_oracle.max_abs, result.reference_vs_oracle_max_abs);
  if (!result.message.empty()) std::printf("  %s\n", result.message.c_str());
  if (package)
    std::printf("  %s\n", result.fallback
                              ? "outside the package's guard: the reference ran (fallback)"
                              : "inside the package's guard: the package's kernels ran");
  if (result.outcome == Outcome::failed) return static_cast<int>(ExitCode::correctness);
  // The behaviour checks of `kgate check` on the same case, so that a stale-output or determinism
  // failure (whose single runs pass) replays too.
  bool behaviour_failed = false;
  const auto behaviour = [&](const char* what, const CaseResult& r) {
    std::printf("%s check: %s%s%s\n", what, outcome_name(r.outcome), r.message.empty() ? "" : ": ",
                r.message.c_str());
    if (r.outcome == Outcome::failed) behaviour_failed = true;
  };
  if (!result.fallback) {
    behaviour("stale-output", runner.check_stale(kernel, c, rule));
    if (find_op(c.op).deterministic)
      behaviour("determinism (bitwise, two runs)", runner.check_deterministic(kernel, c, rule));
  }
  return behaviour_failed ? static_cast<int>(ExitCode::correctness) : 0;
}

}  // namespace kgate::cli
