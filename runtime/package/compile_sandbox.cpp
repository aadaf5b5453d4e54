// Confining a compile process: a mount namespace with an empty root, else Landlock (see the header).
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
#include <cstring>
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
  struct statvfs st{};
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
    struct stat st{};
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
constexpr uint64_t kLandlockReadFile = 1ULL << 2;
constexpr uint64_t kLandlockReadDir = 1ULL << 3;
constexpr uint32_t kLandlockCreateRulesetVersion = 1U << 0;
constexpr int kLandlockRulePathBeneath = 1;

struct __attribute__((packed)) LandlockPathBeneath {
  uint64_t allowed_access;
  int32_t parent_fd;
};

/// The Landlock sandbox; empty on success, else what failed.
std::string enter_landlock(const std::vector<fs::path>& dirs) {
#if defined(SYS_landlock_create_ruleset) && defined(SYS_landlock_add_rule) && \
    defined(SYS_landlock_restrict_self)
  const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kLandlockCreateRulesetVersion);
  if (abi < 1) return errno_text("Landlock is not available");
  uint64_t handled = (1ULL << 13) - 1;  // ABI 1: execute ... make_sym
  if (abi >= 2) handled |= 1ULL << 13;  // refer
  if (abi >= 3) handled |= 1ULL << 14;  // truncate
  if (abi >= 5) handled |= 1ULL << 15;  // ioctl_dev
  const uint64_t attr = handled;        // struct landlock_ruleset_attr, first field only
  const int ruleset = static_cast<int>(
      ::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (ruleset < 0) return errno_text("landlock_create_ruleset");
  for (const auto& d : dirs) {
    LandlockPathBeneath rule{kLandlockReadFile | kLandlockReadDir, -1};
    rule.parent_fd = ::open(d.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rule.parent_fd < 0) {
      ::close(ruleset);
      return errno_text("open " + d.string());
    }
    const long rc = ::syscall(SYS_landlock_add_rule, ruleset, kLandlockRulePathBeneath, &rule, 0);
    ::close(rule.parent_fd);
    if (rc != 0) {
      ::close(ruleset);
      return errno_text("landlock_add_rule " + d.string());
    }
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      ::syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
    ::close(ruleset);
    return errno_text("landlock_restrict_self");
  }
  ::close(ruleset);
  if (::access("/proc/self/environ", R_OK) == 0 && ::open("/proc/self/environ", O_RDONLY) >= 0)
    return "Landlock is on but /proc/self/environ can still be opened";
  return {};
#else
  (void)dirs;
  return "Landlock system calls are unknown to this build";
#endif
}

}  // namespace

const char* sandbox_kind_name(SandboxKind kind) {
  switch (kind) {
    case SandboxKind::mount_namespace: return "mount-namespace";
    case SandboxKind::landlock: return "landlock";
    case SandboxKind::none: return "none";
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
  const std::string ll = enter_landlock(readable_dirs);
  if (ll.empty()) {
    out.kind = SandboxKind::landlock;
    out.detail = "mount namespace refused (" + ns + "); Landlock confines reads, but __has_include "
                 "can still probe whether a path exists";
    return out;
  }
  out.kind = SandboxKind::none;
  out.detail = "mount namespace refused (" + ns + "); " + ll;
  return out;
}

}  // namespace kgate::package
