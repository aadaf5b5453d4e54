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
  // Validated where it will stay, before the earlier pack (kept aside) is dropped: a package that
  // fails its validation leaves OUT as it was.
  package::PackResult packed;
  int validated = 0;
  const bool existed =
      std::filesystem::exists(std::filesystem::path(args.out_dir) / package::kPackRecordFileName);
  try {
    packed = package::pack_package(
        args.source_dir, args.out_dir, [&](const package::PackResult& result) {
          if (!args.quiet) {
            std::printf("packed: %s -> %s (%zu files, hashes in %s)\n", args.source_dir.c_str(),
                        args.out_dir.c_str(), result.files.size(), package::kPackRecordFileName);
            for (const auto& r : result.rewritten) std::printf("  %s\n", r.c_str());
          }
          ValidateArgs validate{args.out_dir, args.compile, args.arch};
          validated = run_validate(validate);
          return validated == 0;
        });
  } catch (const Error& e) {
    std::fprintf(stderr, "kgate: %s\n", e.what());
    return static_cast<int>(ExitCode::usage);
  }
  if (!packed.accepted) {
    std::fprintf(stderr, "kgate pack: %s did not validate (above): %s\n", args.out_dir.c_str(),
                 existed ? "the earlier package there is kept" : "nothing was written");
    return validated;
  }
  return validated;
}

}  // namespace kgate::cli
