// The base version of a pull request, loaded from a build of the base commit (kgate check
// --baseline-build DIR): every kernel that build made a module of (cmake/KgateKernels.cmake,
// kgate.module.NAME and NAME.kgate-module.json in DIR/kgate-modules), in this process beside the
// head's kernels. A module's registrations are captured (runtime/kernel.hpp), so the base's kernels
// keep their names without meeting the head's; its references bind within the module
// (-Bsymbolic), so two builds of one source coexist.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/kernel.hpp"

namespace kgate::cli {

struct BaseBuild {
  std::string dir;    ///< as given
  std::string error;  ///< why it could not be used ("": loaded)
  /// The first module's "build" record (compiler, flags, build type, architectures),
  /// "kgate_version".
  nlohmann::json build = nlohmann::json::object();
  /// The base's kernels by name; code_digest holds their module's code digest.
  std::map<std::string, KernelInfo> kernels;
  std::map<std::string, std::string> module_of;  ///< kernel name -> module file
  /// Kernel name -> the bytes of the op file its module embedded (the base commit's definition).
  std::map<std::string, std::string> op_file_text;
  std::vector<std::string> warnings;
  std::vector<std::string> torch_libraries;  ///< --baseline-torch-library, when given
};

/// Loads every module of the build at `dir` (a build directory, or its kgate-modules directory).
/// Problems that make the base unusable (no modules, a module of another kgate version, one that
/// does not load) are returned in `error`, naming the file and both versions where they differ.
BaseBuild load_base_build(const std::string& dir, const std::string& kgate_version);

/// The head's own modules: those of the build the running kgate belongs to (KGATE_MODULE_DIR, else
/// <its bin directory>/../kgate-modules).
struct HeadBuild {
  /// Code digests by kernel name. Empty where there are no modules: a kernel without a digest is
  /// always timed.
  std::map<std::string, std::string> digests;
  nlohmann::json build = nlohmann::json::object();  ///< the first module's "build" record
};
HeadBuild head_build(const std::string& kgate_version);

/// The build directory of the running kgate (the parent of its kgate-modules/, from
/// KGATE_MODULE_DIR or the program's own path); "" when it is no such build.
std::string head_build_dir();

/// How the base was built differently from the head (compiler, flags, build type, architectures),
/// one line each; empty when they agree or either is unknown.
std::vector<std::string> build_differences(const nlohmann::json& head, const nlohmann::json& base);

/// (A module's code digest: runtime/cuda/module_digest.hpp.)

}  // namespace kgate::cli
