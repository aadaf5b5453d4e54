// kgate validate: a package's manifest checked and its sources compiled, without a GPU.
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

#include "core/error.hpp"
#include "runtime/package/pack.hpp"
#include "runtime/package/validate.hpp"

namespace kgate::cli {
namespace fs = std::filesystem;

CLI::App* add_validate_command(CLI::App& app, ValidateArgs& args) {
  auto* cmd = app.add_subcommand("validate", "Validate a kernel package: manifest, paths, NVRTC compile (no GPU needed)");
  cmd->add_option("package", args.package_dir, "Package directory (holding kgate.json)")->required();
  cmd->add_flag_callback("--no-compile", [&args] { args.compile = false; }, "Check the manifest only");
  cmd->add_option("--arch", args.arch, "GPU architecture to compile for")->capture_default_str();
  return cmd;
}

int run_validate(const ValidateArgs& args) {
  package::ValidateOptions options = validate_options(args.arch);
  options.compile = args.compile;
  // Messages name the package by its full path: `kgate validate .` would otherwise say "in .".
  std::error_code ec;
  const fs::path absolute = fs::absolute(args.package_dir, ec);
  std::string dir = ec ? args.package_dir : absolute.lexically_normal().string();
  if (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const auto report = package::validate_package(dir, options);
  if (!report.ok()) {
    std::fprintf(stderr, "%s", package::format_problems(report.problems).c_str());
    std::fprintf(stderr, "kgate: %zu problem(s) in %s\n", report.problems.size(), dir.c_str());
    return static_cast<int>(ExitCode::usage);
  }
  std::printf("valid: %s\n", package::format_summary(report).c_str());
  // A packed package edited since: valid, but no longer what its source packs to.
  const auto drift = package::pack_drift(dir);
  if (!drift.empty()) {
    std::string files;
    for (const auto& d : drift) files += (files.empty() ? "" : ", ") + d;
    std::fprintf(stderr, "kgate: note: %s differs from its %s (edited after kgate pack): %s; pack it again from its source\n",
                 dir.c_str(), package::kPackRecordFileName, files.c_str());
  }
  return 0;
}

}  // namespace kgate::cli
