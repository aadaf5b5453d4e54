// The worker sandbox: a check or sweep worker runs packages' code and TorchScript references that a
// package may embed, so it reads only what a run needs and writes only its own output. Each test
// enters the sandbox in a forked child (it cannot be left) and reports what the child could open.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "package_test_util.hpp"
#include "runtime/package/compile_sandbox.hpp"

namespace kgate::package {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

bool can_read(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char c;
  const bool ok = ::read(fd, &c, 1) >= 0;
  ::close(fd);
  return ok;
}

bool can_write(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

bool below(const fs::path& p, const fs::path& dir) {
  const std::string a = fs::weakly_canonical(p).string(), b = fs::weakly_canonical(dir).string();
  return a == b || a.rfind(b + "/", 0) == 0;
}

/// A directory the sandbox does not open up (not below /tmp, /usr, ...): the working directory or
/// $HOME; empty when both are.
fs::path outside_dir() {
  std::vector<fs::path> open_roots = {"/tmp", "/var/tmp", "/usr", "/opt", "/lib", "/dev", "/sys"};
  if (const char* t = std::getenv("TMPDIR")) open_roots.push_back(t);
  std::vector<fs::path> candidates = {fs::current_path()};
  if (const char* home = std::getenv("HOME")) candidates.push_back(home);
  for (const auto& c : candidates) {
    bool open = false;
    for (const auto& r : open_roots) open = open || below(c, r);
    if (!open) return c;
  }
  return {};
}

/// Runs `body` in a forked child inside the run sandbox made of `paths`; its exit code (0: every
/// expectation held, else a bit per broken one); -1 when the child could not enter the sandbox.
int in_sandbox(const RunSandboxPaths& paths, const std::function<int()>& body, std::string* why) {
  int pipe_fd[2];
  if (::pipe(pipe_fd) != 0) return -2;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fd[0]);
    const auto outcome = enter_run_sandbox(paths);
    if (outcome.kind != SandboxKind::landlock) {
      const std::string text = outcome.detail;
      if (::write(pipe_fd[1], text.data(), text.size()) < 0) _exit(98);
      _exit(99);
    }
    _exit(body());
  }
  ::close(pipe_fd[1]);
  char buf[512];
  const ssize_t n = ::read(pipe_fd[0], buf, sizeof buf);
  ::close(pipe_fd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return -3;
  if (WEXITSTATUS(status) == 99) {
    if (why && n > 0) why->assign(buf, static_cast<size_t>(n));
    return -1;
  }
  return WEXITSTATUS(status);
}

#define KGATE_SKIP_WITHOUT_LANDLOCK(code, why) \
  if ((code) == -1) GTEST_SKIP() << "SKIPPED (visibly): no Landlock on this machine: " << (why)

TEST(RunSandbox, ReadsWhatARunNeedsAndNothingElse) {
  const fs::path outside = outside_dir();
  if (outside.empty())
    GTEST_SKIP() << "SKIPPED (visibly): no directory outside the sandbox's open roots here";
  const fs::path secret_dir = outside / ("kgate-run-sandbox-secret-" + std::to_string(::getpid()));
  fs::create_directories(secret_dir);
  std::ofstream(secret_dir / "token") << "kgate-test-secret";
  // The package lies outside the writable temporary directories too, as a repository's would.
  const fs::path package = outside / ("kgate-run-sandbox-package-" + std::to_string(::getpid()));
  fs::create_directories(package);
  std::ofstream(package / "kernel.cu") << "__global__ void k() {}\n";
  TempDir out;
  std::string why;
  const fs::path ppid_environ = "/proc/" + std::to_string(::getpid()) + "/environ";
  const int code = in_sandbox(
      {{package}, {out.path()}},
      [&] {
        int broken = 0;
        if (!can_read(package / "kernel.cu")) broken |= 1;         // the package
        if (can_read(secret_dir / "token")) broken |= 2;           // anything else of the user's
        if (can_read("/proc/self/environ")) broken |= 4;           // its own environment
        if (can_read(ppid_environ)) broken |= 8;                   // kgate's (the runner's secrets)
        if (!can_write(out.path() / "report.json")) broken |= 16;  // its output
        if (can_write(package / "planted.cu")) broken |= 32;       // the package is read-only
        if (!can_read("/etc/ld.so.cache") && fs::exists("/etc/ld.so.cache"))
          broken |= 64;                                   // the loader
        if (can_read("/etc/passwd")) broken |= 128;       // the rest of /etc
        if (!can_read("/proc/self/maps")) broken |= 256;  // what libc and CUDA read
        if (!can_read("/dev/null") || !can_write("/dev/null")) broken |= 512;
        return broken;
      },
      &why);
  fs::remove_all(secret_dir);
  fs::remove_all(package);
  KGATE_SKIP_WITHOUT_LANDLOCK(code, why);
  EXPECT_EQ(code, 0)
      << "bits: 1 package unreadable, 2 secret readable, 4 own environ readable, 8 parent's "
         "environ readable, 16 output unwritable, 32 package writable, 64 ld.so.cache unreadable, "
         "128 /etc/passwd readable, 256 /proc/self/maps unreadable, 512 /dev/null";
}

TEST(RunSandbox, ChildProcessesStayInside) {
  const fs::path outside = outside_dir();
  if (outside.empty())
    GTEST_SKIP() << "SKIPPED (visibly): no directory outside the sandbox's open roots here";
  const fs::path secret = outside / ("kgate-run-sandbox-child-" + std::to_string(::getpid()));
  std::ofstream(secret) << "kgate-test-secret";
  TempDir out;
  std::string why;
  const int code = in_sandbox(
      {{}, {out.path()}},
      [&] {
        // /bin/cat started from inside (executing stays allowed) cannot read it either.
        const std::string cmd = "/bin/cat '" + secret.string() + "' > /dev/null 2>&1";
        const int rc = std::system(cmd.c_str());
        return rc == 0 ? 1 : 0;
      },
      &why);
  fs::remove(secret);
  KGATE_SKIP_WITHOUT_LANDLOCK(code, why);
  EXPECT_EQ(code, 0) << "a process started inside the sandbox read a file outside it";
}

TEST(RunSandbox, WorkerEnvironmentKeepsOnlyWhatARunReads) {
  const char* env[] = {"PATH=/usr/bin",
                       "HOME=/home/runner",
                       "GITHUB_TOKEN=ghs_secret",
                       "AWS_SECRET_ACCESS_KEY=secret",
                       "ACTIONS_RUNTIME_TOKEN=secret",
                       "CUDA_VISIBLE_DEVICES=1",
                       "KGATE_OPS=/ops",
                       "KGATE_CACHE_KEY=k",
                       "LC_ALL=C",
                       "TORCH_SHOW_CPP_STACKTRACES=1",
                       "CTEST_RESOURCE_GROUP_0_GPUS=id:1,slots:1",
                       "NOEQUALSIGN",
                       "MY_PASSWORD=x",
                       nullptr};
  const auto kept = worker_environment(env);
  const std::vector<std::string> expected = {"PATH=/usr/bin",
                                             "HOME=/home/runner",
                                             "CUDA_VISIBLE_DEVICES=1",
                                             "KGATE_OPS=/ops",
                                             "KGATE_CACHE_KEY=k",
                                             "LC_ALL=C",
                                             "TORCH_SHOW_CPP_STACKTRACES=1",
                                             "CTEST_RESOURCE_GROUP_0_GPUS=id:1,slots:1"};
  EXPECT_EQ(kept, expected);
  EXPECT_TRUE(worker_environment(nullptr).empty());
}

}  // namespace
}  // namespace kgate::package
