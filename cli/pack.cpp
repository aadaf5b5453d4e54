// kgate pack: a package directory made self-contained (its op file and sources copied in, checked).
#include "cli/commands.hpp"

#include <cstdio>

#include "core/error.hpp"
#include "runtime/package/pack.hpp"

namespace kgate::cli {

int run_pack(const PackArgs& args) {
  package::PackResult packed;
  try {
    packed = package::pack_package(args.source_dir, args.out_dir);
  } catch (const Error& e) {
    std::fprintf(stderr, "kgate: %s\n", e.what());
    return static_cast<int>(ExitCode::usage);
  }
  if (!args.quiet) {
    std::printf("packed: %s -> %s (%zu files, hashes in %s)\n", args.source_dir.c_str(), args.out_dir.c_str(),
                packed.files.size(), package::kPackRecordFileName);
    for (const auto& r : packed.rewritten) std::printf("  %s\n", r.c_str());
  }
  ValidateArgs validate{args.out_dir, args.compile, args.arch};
  return run_validate(validate);
}

}  // namespace kgate::cli
