// kgate pack: a package directory made self-contained (its op file and sources copied in, its
// nvcc build run where it asks for one, checked).
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>

#include "core/error.hpp"
#include "runtime/package/pack.hpp"

namespace kgate::cli {

CLI::App* add_pack_command(CLI::App& app, PackArgs& args) {
  auto* cmd = app.add_subcommand(
      "pack",
      "Make a source package self-contained: copy it and the include_dirs it "
      "reaches outside itself into OUT (hashes in kgate-pack.json), compile it with nvcc "
      "into a fatbin where its manifest asks (\"build\"), then validate OUT");
  cmd->add_option("source", args.source_dir, "Source package directory (holding kgate.json)")
      ->required();
  cmd->add_option("out", args.out_dir,
                  "Directory to write the packed package to (new, empty, or an earlier pack)")
      ->required();
  cmd->add_flag_callback(
      "--no-compile", [&args] { args.compile = false; }, "Validate the manifest only (no NVRTC)");
  cmd->add_option("--arch", args.arch, "GPU architecture to compile for")->capture_default_str();
  cmd->add_flag("-q,--quiet", args.quiet, "Print only the validation line");
  return cmd;
}

int run_pack(const PackArgs& args) {
  package::PackResult packed;
  try {
    packed = package::pack_package(args.source_dir, args.out_dir);
  } catch (const Error& e) {
    std::fprintf(stderr, "kgate: %s\n", e.what());
    return static_cast<int>(ExitCode::usage);
  }
  if (!args.quiet) {
    std::printf("packed: %s -> %s (%zu files, hashes in %s)\n", args.source_dir.c_str(),
                args.out_dir.c_str(), packed.files.size(), package::kPackRecordFileName);
    for (const auto& r : packed.rewritten) std::printf("  %s\n", r.c_str());
  }
  ValidateArgs validate{args.out_dir, args.compile, args.arch};
  return run_validate(validate);
}

}  // namespace kgate::cli
