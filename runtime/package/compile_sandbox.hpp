// The sandbox a package compile runs in. A package's CUDA source is hostile input: `#include
// "/proc/self/environ"` would otherwise put the runner's environment (CI secrets) into NVRTC's
// error log. The compile runs in a separate process (kgate-nvrtc-worker) started with an empty
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

/// The run's own paths that a sandboxed worker may reach, beyond the system's.
struct RunSandboxPaths {
  std::vector<std::filesystem::path> readable;  ///< read only (directories, or single files)
  std::vector<std::filesystem::path> writable;  ///< read, write, create and remove below
};

/// The sandbox a check or sweep worker enters first, before it starts CUDA, draws a case, or runs a
/// kernel or a reference: it runs a package's code and TorchScript that a package may embed.
/// Landlock then lets it read only
///   - the system's libraries (/usr, /lib*, /opt, /bin, /sbin), each shared library it has loaded
///     (the file alone: a custom op's library may lie in the user's build directory), the
///     site-packages directory of LibTorch's wheel, the CUDA toolkit, kgate and its compile worker;
///   - /dev, /sys, /proc/driver, /proc/sys, a few files of /proc (cpuinfo, meminfo, ...), and of
///     /proc/self what the CUDA driver and LibTorch read (maps, status, fd/, and task/, which the
///     driver also writes), not /proc/self/environ (its threads' environ under task/ shows the
///     filtered environment that worker_environment() leaves);
///   - the files of /etc that the loader and libc read (ld.so.cache, localtime, nsswitch.conf);
///   - `paths.readable`;
/// and write only below `paths.writable`, /tmp, /var/tmp, $TMPDIR, /dev and the CUDA JIT cache.
/// The rest (the home directory, the repository's .git, other processes' /proc entries and with
/// them the runner's environment, /etc, /run/secrets) cannot be opened. Executing and ioctl are
/// not confined (kgate starts its compile worker; CUDA drives the device). Checked after entry:
/// this process's and its parent's environ cannot be opened.
/// kind is none, with the reason in detail, where Landlock is unavailable; kind landlock with a
/// detail when threads started before the call stay outside it (Landlock confines the calling
/// thread and what it starts).
SandboxOutcome enter_run_sandbox(const RunSandboxPaths& paths);

/// The environment a worker process gets: `env` (NAME=VALUE entries) without the variables a
/// kernel or a reference has no business with (the CI job's tokens and keys). Kept: PATH, HOME,
/// USER, LOGNAME, LANG, LANGUAGE, TZ, TMPDIR, TERM, NO_COLOR, LD_LIBRARY_PATH, LD_PRELOAD,
/// XDG_CACHE_HOME, XDG_CONFIG_HOME, CI, GITHUB_ACTIONS, and names starting with LC_, CUDA_,
/// NVIDIA_, KGATE_ (KGATE_CACHE_KEY included: the worker checks cache entries with it, and cannot
/// read its own environ once sandboxed), TORCH_, PYTORCH_, OMP_, GOMP_, KMP_, MKL_, CUBLAS, CUDNN_,
/// NCCL_, CTEST_RESOURCE_ and the sanitizers' options.
std::vector<std::string> worker_environment(const char* const* env);

}  // namespace kgate::package
