// The sandbox a package compile runs in. A package's CUDA source is hostile input: `#include
// "/proc/self/environ"` would otherwise put the runner's environment (CI secrets) into NVRTC's error
// log. The compile runs in a separate process (kgate-nvrtc-worker) started with an empty
// environment, which, before it compiles, confines itself so that only the toolkit's include
// directories can be read:
//   1. a mount namespace (inside a user namespace when not privileged) whose root is an empty tmpfs
//      holding read-only bind mounts of those directories, entered with chroot; then every
//      capability is dropped. Nothing else exists there: no /proc, no /etc, no working directory,
//      so neither an #include nor __has_include can reach or probe a file outside.
//   2. where namespaces are refused: Landlock, which denies opening any file outside those
//      directories (existence can still be probed with __has_include).
//   3. where neither is available: nothing; the compile still runs (with the empty environment and
//      the limits), the reason is reported, and `--require-sandbox` makes it an error.
// A package's own files never reach NVRTC through the file system: kgate reads them (package_files)
// and hands them over in memory.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kgate::package {

/// How a compile was confined.
enum class SandboxKind { mount_namespace, landlock, none };

/// "mount-namespace", "landlock", "none".
const char* sandbox_kind_name(SandboxKind kind);

struct SandboxOutcome {
  SandboxKind kind = SandboxKind::none;
  /// What was tried and why it failed, when kind is not mount_namespace (empty otherwise).
  std::string detail;
};

/// Confines the calling process (meant for kgate-nvrtc-worker, single-threaded, after NVRTC is
/// loaded and warmed up) so that only `readable_dirs` can be read. Tries the mount namespace, then
/// Landlock. Irreversible. Never throws.
SandboxOutcome enter_compile_sandbox(const std::vector<std::filesystem::path>& readable_dirs);

}  // namespace kgate::package
