// Confining a compile process: a mount namespace with an empty root, else Landlock (see the
// header).
#include "runtime/package/compile_sandbox.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <system_error>

namespace kgate::package {

namespace fs = std::filesystem;

namespace {

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

bool write_file(const char* path, const std::string& text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

/// mkdir -p below the (new) root; false with errno on failure.
bool make_dirs(const fs::path& p) {
  std::error_code ec;
  fs::create_directories(p, ec);
  if (ec) errno = ec.value();
  return !ec;
}

/// The mount flags of `path` that a remount of a bind mount in a user namespace must keep.
unsigned long locked_flags(const char* path) {
  struct statvfs st {};
  if (::statvfs(path, &st) != 0) return 0;
  unsigned long f = 0;
  if (st.f_flag & ST_NOSUID) f |= MS_NOSUID;
  if (st.f_flag & ST_NODEV) f |= MS_NODEV;
  if (st.f_flag & ST_NOEXEC) f |= MS_NOEXEC;
  if (st.f_flag & ST_NOATIME) f |= MS_NOATIME;
  if (st.f_flag & ST_NODIRATIME) f |= MS_NODIRATIME;
  if (st.f_flag & ST_RELATIME) f |= MS_RELATIME;
  return f;
}

/// True when `p` is `dir` or lies below it.
bool is_below(const fs::path& p, const fs::path& dir) {
  auto d = dir.begin();
  auto q = p.begin();
  for (; d != dir.end(); ++d, ++q)
    if (q == p.end() || *d != *q) return false;
  return true;
}

/// Drops every capability of the calling thread (in the namespace it is now in).
bool drop_capabilities() {
  struct {
    uint32_t version;
    int pid;
  } header{0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0};
  struct {
    uint32_t effective, permitted, inheritable;
  } data[2]{};
  return ::syscall(SYS_capset, &header, data) == 0;
}

/// The mount-namespace sandbox; empty on success, else what failed.
std::string enter_mount_namespace(const std::vector<fs::path>& dirs) {
  // Each directory appears at the path NVRTC is given and at its canonical path.
  std::vector<fs::path> targets;
  for (const auto& d : dirs) {
    targets.push_back(d);
    std::error_code ec;
    const fs::path canon = fs::canonical(d, ec);
    if (ec) return "cannot resolve " + d.string() + ": " + ec.message();
    if (canon != d) targets.push_back(canon);
  }
  // The empty root is mounted over a directory that holds none of them (mounts from the old
  // namespace cannot be bound, so they are bound by path, from the new one, while still visible).
  const char* root = nullptr;
  for (const char* candidate : {"/tmp", "/mnt", "/media", "/srv", "/opt", "/var/tmp"}) {
    struct stat st {};
    if (::stat(candidate, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    bool holds = false;
    for (const auto& t : targets) holds = holds || is_below(t, candidate);
    if (!holds) {
      root = candidate;
      break;
    }
  }
  if (!root) return "no directory to mount the sandbox root on";
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  if (::unshare(CLONE_NEWNS) != 0) {
    // Not privileged: a user namespace grants the mount rights inside it only.
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return errno_text("unshare(user, mount)");
    write_file("/proc/self/setgroups", "deny");
    if (!write_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1\n") ||
        !write_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1\n"))
      return errno_text("writing the user namespace's id maps");
  }
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return errno_text("making mounts private");
  if (::mount("kgate-sandbox", root, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "size=1m,mode=0755") != 0)
    return errno_text(std::string("mounting an empty root on ") + root);
  for (const auto& t : targets) {
    const fs::path target = fs::path(root) / t.relative_path();
    if (!make_dirs(target)) return errno_text("mkdir " + target.string());
    if (::mount(t.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
      return errno_text("bind-mounting " + t.string());
    // Read-only where the kernel lets a namespace remount it (the compile writes nothing anyway).
    ::mount(nullptr, target.c_str(), nullptr,
            MS_BIND | MS_REMOUNT | MS_RDONLY | locked_flags(target.c_str()), nullptr);
  }
  ::mount(nullptr, root, nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
          nullptr);
  if (::chdir(root) != 0 || ::chroot(".") != 0 || ::chdir("/") != 0)
    return errno_text("entering the sandbox root");
  if (!drop_capabilities()) return errno_text("dropping capabilities");
  // The promise, checked: nothing outside the toolkit's headers is there.
  for (const char* probe : {"/proc/self/environ", "/etc/passwd", "/proc"})
    if (::access(probe, F_OK) == 0) return std::string("the sandbox still shows ") + probe;
  return {};
}

// Landlock (include/uapi/linux/landlock.h), declared here so that older headers build it.
constexpr uint64_t kLandlockExecute = 1ULL << 0;
constexpr uint64_t kLandlockWriteFile = 1ULL << 1;
constexpr uint64_t kLandlockReadFile = 1ULL << 2;
constexpr uint64_t kLandlockReadDir = 1ULL << 3;
constexpr uint64_t kLandlockTruncate = 1ULL << 14;
constexpr uint32_t kLandlockCreateRulesetVersion = 1U << 0;
constexpr int kLandlockRulePathBeneath = 1;

struct __attribute__((packed)) LandlockPathBeneath {
  uint64_t allowed_access;
  int32_t parent_fd;
};

/// One Landlock rule: `path` (a directory: everything below it; or one file) with `access`.
struct LandlockRule {
  fs::path path;
  uint64_t access;
};

/// The Landlock ABI version, or < 1 with errno when Landlock is not available.
long landlock_abi() {
#if defined(SYS_landlock_create_ruleset)
  return ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kLandlockCreateRulesetVersion);
#else
  errno = ENOSYS;
  return -1;
#endif
}

/// Confines the calling thread (and the threads and processes it starts from now on) to `rules`
/// for the access rights in `handled`; empty on success, else what failed. A rule's path that does
/// not exist is skipped when `skip_missing`.
std::string enter_landlock(uint64_t handled, const std::vector<LandlockRule>& rules,
                           bool skip_missing) {
#if defined(SYS_landlock_create_ruleset) && defined(SYS_landlock_add_rule) && \
    defined(SYS_landlock_restrict_self)
  const uint64_t attr = handled;  // struct landlock_ruleset_attr, first field only
  const int ruleset =
      static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (ruleset < 0) return errno_text("landlock_create_ruleset");
  constexpr uint64_t kFileRights =
      kLandlockExecute | kLandlockWriteFile | kLandlockReadFile | kLandlockTruncate;
  for (const auto& r : rules) {
    const int fd = ::open(r.path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) {
      if (skip_missing && (errno == ENOENT || errno == ENOTDIR)) continue;
      ::close(ruleset);
      return errno_text("open " + r.path.string());
    }
    struct stat st {};
    const bool dir = ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
    // A rule on a file may only carry the rights that apply to files.
    LandlockPathBeneath rule{(dir ? r.access : r.access & kFileRights) & handled, fd};
    const long rc = rule.allowed_access == 0 ? 0
                                             : ::syscall(SYS_landlock_add_rule, ruleset,
                                                         kLandlockRulePathBeneath, &rule, 0);
    ::close(fd);
    if (rc != 0) {
      ::close(ruleset);
      return errno_text("landlock_add_rule " + r.path.string());
    }
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      ::syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
    ::close(ruleset);
    return errno_text("landlock_restrict_self");
  }
  ::close(ruleset);
  return {};
#else
  (void)handled;
  (void)rules;
  (void)skip_missing;
  return "Landlock system calls are unknown to this build";
#endif
}

/// The compile's Landlock sandbox: every file-system right handled, only reading `dirs` allowed.
std::string enter_compile_landlock(const std::vector<fs::path>& dirs) {
  const long abi = landlock_abi();
  if (abi < 1) return errno_text("Landlock is not available");
  uint64_t handled = (1ULL << 13) - 1;  // ABI 1: execute ... make_sym
  if (abi >= 2) handled |= 1ULL << 13;  // refer
  if (abi >= 3) handled |= 1ULL << 14;  // truncate
  if (abi >= 5) handled |= 1ULL << 15;  // ioctl_dev
  std::vector<LandlockRule> rules;
  for (const auto& d : dirs) rules.push_back({d, kLandlockReadFile | kLandlockReadDir});
  if (auto failed = enter_landlock(handled, rules, false); !failed.empty()) return failed;
  if (::access("/proc/self/environ", R_OK) == 0 && ::open("/proc/self/environ", O_RDONLY) >= 0)
    return "Landlock is on but /proc/self/environ can still be opened";
  return {};
}

/// Threads of this process, from /proc/self/status (0 when it cannot be read).
int thread_count() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  int n = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, "Threads:", 8) == 0) n = std::atoi(line + 8);
  std::fclose(f);
  return n;
}

}  // namespace

const char* sandbox_kind_name(SandboxKind kind) {
  switch (kind) {
    case SandboxKind::mount_namespace:
      return "mount-namespace";
    case SandboxKind::landlock:
      return "landlock";
    case SandboxKind::none:
      return "none";
  }
  return "none";
}

SandboxOutcome enter_compile_sandbox(const std::vector<fs::path>& readable_dirs) {
  SandboxOutcome out;
  const std::string ns = enter_mount_namespace(readable_dirs);
  if (ns.empty()) {
    out.kind = SandboxKind::mount_namespace;
    return out;
  }
  const std::string ll = enter_compile_landlock(readable_dirs);
  if (ll.empty()) {
    out.kind = SandboxKind::landlock;
    out.detail = "mount namespace refused (" + ns +
                 "); Landlock confines reads, but __has_include "
                 "can still probe whether a path exists";
    return out;
  }
  out.kind = SandboxKind::none;
  out.detail = "mount namespace refused (" + ns + "); " + ll;
  return out;
}

namespace {

/// The files this process has mapped (its shared libraries: each one alone, not its directory,
/// which may be a build directory beside the user's files), and the site-packages directory of any
/// that lies in one (LibTorch loads more of its wheel's libraries, and the nvidia-* wheels',
/// later).
std::vector<fs::path> mapped_library_paths() {
  std::set<std::string> paths;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.find(" /");
    if (slash == std::string::npos) continue;
    std::string file = line.substr(slash + 1);
    if (const auto deleted = file.find(" (deleted)"); deleted != std::string::npos)
      file.resize(deleted);
    paths.insert(file);
    for (const char* root : {"/site-packages/", "/dist-packages/"})
      if (const auto at = file.find(root); at != std::string::npos)
        paths.insert(file.substr(0, at + std::strlen(root) - 1));
  }
  return {paths.begin(), paths.end()};
}

}  // namespace

SandboxOutcome enter_run_sandbox(const RunSandboxPaths& paths) {
  SandboxOutcome out;
  const long abi = landlock_abi();
  if (abi < 1) {
    out.detail = errno_text("Landlock is not available");
    return out;
  }
  // Reading and writing are confined; executing (kgate's compile worker) and ioctl (the device)
  // are not handled, so they stay allowed.
  uint64_t handled = ((1ULL << 13) - 1) & ~kLandlockExecute;  // ABI 1: write_file ... make_sym
  if (abi >= 2) handled |= 1ULL << 13;                        // refer
  if (abi >= 3) handled |= kLandlockTruncate;
  const uint64_t read = kLandlockReadFile | kLandlockReadDir;
  const uint64_t write = handled;
  std::vector<LandlockRule> rules;
  for (const char* p : {"/usr",
                        "/lib",
                        "/lib32",
                        "/lib64",
                        "/libx32",
                        "/bin",
                        "/sbin",
                        "/opt",
                        "/sys",
                        "/proc/driver",
                        "/proc/sys",
                        "/proc/cpuinfo",
                        "/proc/meminfo",
                        "/proc/stat",
                        "/proc/modules",
                        "/proc/devices",
                        "/proc/version",
                        "/proc/filesystems",
                        "/proc/self/maps",
                        "/proc/self/smaps",
                        "/proc/self/status",
                        "/proc/self/stat",
                        "/proc/self/statm",
                        "/proc/self/cgroup",
                        "/proc/self/mountinfo",
                        "/proc/self/mounts",
                        "/proc/self/limits",
                        "/proc/self/auxv",
                        "/proc/self/cmdline",
                        "/proc/self/comm",
                        "/proc/self/fd",
                        "/etc/ld.so.cache",
                        "/etc/ld.so.conf",
                        "/etc/ld.so.conf.d",
                        "/etc/localtime",
                        "/etc/nsswitch.conf",
                        "/etc/host.conf",
                        "/etc/nvidia",
                        "/etc/OpenCL"})
    rules.push_back({p, read});
  for (const auto& p : mapped_library_paths()) rules.push_back({p, read});
  // kgate itself and its compile worker (executing is not confined; reading them is allowed).
  std::error_code ec;
  if (const auto exe = fs::read_symlink("/proc/self/exe", ec); !ec) {
    rules.push_back({exe, read});
    rules.push_back({exe.parent_path() / "kgate-nvrtc-worker", read});
  }
  if (const char* v = std::getenv("KGATE_NVRTC_WORKER"); v && *v == '/') rules.push_back({v, read});
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(var); v && *v == '/') rules.push_back({v, read});
  rules.push_back({"/usr/local/cuda", read});
  for (const auto& p : paths.readable) rules.push_back({p, read});
  // The CUDA driver writes below /proc/self/task (cuInit fails with CUDA_ERROR_OPERATING_SYSTEM
  // without it, on the H200 machine): the worker's own threads, whose environ shows the filtered
  // environment of worker_environment().
  for (const char* p : {"/tmp", "/var/tmp", "/dev", "/proc/self/task"}) rules.push_back({p, write});
  if (const char* v = std::getenv("TMPDIR"); v && *v == '/') rules.push_back({v, write});
  // The CUDA driver's JIT cache.
  if (const char* v = std::getenv("CUDA_CACHE_PATH"); v && *v == '/') rules.push_back({v, write});
  else if (const char* home = std::getenv("HOME"); home && *home == '/')
    rules.push_back({fs::path(home) / ".nv", write});
  for (const auto& p : paths.writable) rules.push_back({p, write});
  const int threads = thread_count();
  if (auto failed = enter_landlock(handled, rules, true); !failed.empty()) {
    out.detail = failed;
    return out;
  }
  // The promise, checked.
  for (const std::string probe :
       {std::string("/proc/self/environ"), "/proc/" + std::to_string(::getppid()) + "/environ"})
    if (const int fd = ::open(probe.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
      ::close(fd);
      out.detail = "Landlock is on but " + probe + " can still be opened";
      return out;
    }
  out.kind = SandboxKind::landlock;
  if (threads > 1)
    out.detail =
        std::to_string(threads - 1) + " thread(s) started before it stay outside the sandbox";
  return out;
}

std::vector<std::string> worker_environment(const char* const* env) {
  static const char* const kNames[] = {"PATH",
                                       "HOME",
                                       "USER",
                                       "LOGNAME",
                                       "LANG",
                                       "LANGUAGE",
                                       "TZ",
                                       "TMPDIR",
                                       "TERM",
                                       "NO_COLOR",
                                       "LD_LIBRARY_PATH",
                                       "LD_PRELOAD",
                                       "XDG_CACHE_HOME",
                                       "XDG_CONFIG_HOME",
                                       "CI",
                                       "GITHUB_ACTIONS"};
  static const char* const kPrefixes[] = {
      "LC_",   "CUDA_",           "NVIDIA_", "KGATE_", "TORCH_", "PYTORCH_",
      "OMP_",  "GOMP_",           "KMP_",    "MKL_",   "CUBLAS", "CUDNN_",
      "NCCL_", "CTEST_RESOURCE_", "ASAN_",   "UBSAN_", "LSAN_",  "TSAN_"};
  std::vector<std::string> kept;
  for (; env && *env; ++env) {
    const std::string entry = *env;
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = entry.substr(0, eq);
    bool keep = false;
    for (const char* n : kNames) keep = keep || name == n;
    for (const char* p : kPrefixes) keep = keep || name.rfind(p, 0) == 0;
    if (keep) kept.push_back(entry);
  }
  return kept;
}

}  // namespace kgate::package
