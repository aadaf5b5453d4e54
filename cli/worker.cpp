// Worker processes under a watchdog.
#include "cli/worker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/error.hpp"
#include "runtime/package/compile_sandbox.hpp"
#include "runtime/package/nvrtc_cache.hpp"

extern char** environ;

namespace kgate::cli {

namespace {

WorkerResult spawn_worker(const std::vector<std::string>& args,
                          const std::vector<std::string>& wrapper,
                          const std::vector<std::string>& extra_env, const std::string& report_path,
                          double timeout_s,
                          const std::function<std::optional<std::string>()>& stalled) {
  WorkerResult r;
  if (!report_path.empty()) std::remove(report_path.c_str());
  std::vector<std::string> argv_storage = {"kgate"};
  std::string program = "/proc/self/exe";
  if (!wrapper.empty()) {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) {
      r.failure = "could not find the kgate binary to start a worker under " + wrapper.front() +
                  ": " + ec.message();
      return r;
    }
    program = wrapper.front();
    argv_storage = wrapper;
    argv_storage.push_back(self.string());
  }
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  // No shell: the binary and its arguments go straight to posix_spawn, with the environment that a
  // kernel or a reference may see (the CI job's tokens are not in it).
  std::vector<std::string> env_storage = package::worker_environment(environ);
  env_storage.insert(env_storage.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    r.failure = std::string("could not make a pipe for a worker: ") + std::strerror(errno);
    return r;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, out[1], 2);
  pid_t pid = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    r.failure = std::string("could not start a worker process: ") + std::strerror(rc);
    return r;
  }
  const int flags = fcntl(out[0], F_GETFL);
  fcntl(out[0], F_SETFL, flags | O_NONBLOCK);
  bool open_pipe = true;
  const auto drain = [&] {
    char buf[65536];
    for (;;) {
      const ssize_t n = read(out[0], buf, sizeof buf);
      if (n > 0) r.output.add(std::string_view(buf, static_cast<std::size_t>(n)));
      else if (n == 0) open_pipe = false;
      if (n <= 0) return;
    }
  };
  int status = 0;
  bool killed = false;
  std::string stall_reason;
  auto last_stall_check = t0;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      close(out[0]);
      r.failure = std::string("waitpid failed: ") + std::strerror(errno);
      return r;
    }
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!killed && elapsed > timeout_s) {
      kill(pid, SIGKILL);
      killed = true;
    }
    if (!killed && stalled &&
        std::chrono::steady_clock::now() - last_stall_check > std::chrono::milliseconds(200)) {
      last_stall_check = std::chrono::steady_clock::now();
      if (auto why = stalled()) {
        stall_reason = *why;
        kill(pid, SIGKILL);
        killed = true;
      }
    }
    pollfd p{out[0], POLLIN, 0};
    if (open_pipe && poll(&p, 1, 20) > 0) drain();
    else if (!open_pipe) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // What is left in the pipe; a process the worker started could keep it open, so only briefly.
  for (int i = 0; i < 50 && open_pipe; ++i) {
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) break;
    drain();
  }
  close(out[0]);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (killed && !stall_reason.empty()) {
    r.hung = true;
    r.failure = "hung: " + stall_reason + "; the worker was killed";
    return r;
  }
  if (killed) {
    r.hung = true;
    r.failure = "hung: no result after " + std::to_string(static_cast<int>(timeout_s)) +
                " s, the worker was killed (raise --kernel-timeout if the kernel is just slow)";
    return r;
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    r.failure = std::string("the worker crashed with signal ") + std::to_string(sig) + " (" +
                strsignal(sig) + ")";
    return r;
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (report_path.empty()) {  // the caller reads what the worker wrote
    r.ok = true;
    return r;
  }
  std::ifstream f(report_path);
  if (!f) {
    r.failure =
        "the worker exited with code " + std::to_string(r.exit_code) + " without writing a report";
    return r;
  }
  try {
    nlohmann::json j;
    f >> j;
    r.report = report_from_json(j);
    r.ok = true;
  } catch (const std::exception& e) {
    r.failure = std::string("the worker's report is unreadable: ") + e.what();
  }
  return r;
}

}  // namespace

WorkerResult run_worker(const plan::WorkerInvocation& worker, const std::string& report_path,
                        double timeout_s,
                        const std::function<std::optional<std::string>()>& stalled) {
  return spawn_worker(worker.args(), worker.wrapper, worker.env, report_path, timeout_s, stalled);
}

WorkerResult run_worker_process(const std::vector<std::string>& args,
                                const std::string& report_path, double timeout_s) {
  return spawn_worker(args, {}, {}, report_path, timeout_s, {});
}

std::string enter_worker_sandbox(const std::vector<std::string>& readable,
                                 const std::string& out_dir, const std::string& shared_dir) {
  namespace fs = std::filesystem;
  package::RunSandboxPaths paths;
  for (const auto& p : readable)
    if (!p.empty()) paths.readable.push_back(fs::absolute(p));
  if (const char* ops =
          std::getenv("KGATE_OPS")) {  // op files: directories or files, ':'-separated
    std::string list = ops;
    for (size_t at = 0; at <= list.size();) {
      const size_t colon = std::min(list.find(':', at), list.size());
      if (colon > at) paths.readable.push_back(list.substr(at, colon - at));
      at = colon + 1;
    }
  }
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  paths.writable.push_back(fs::absolute(out_dir));
  if (!shared_dir.empty()) {
    fs::create_directories(shared_dir, ec);
    paths.writable.push_back(fs::absolute(shared_dir));
  }
  try {  // the NVRTC cache (a package compiled again in the worker) and its key
    const fs::path cache = package::default_cache_dir();
    fs::create_directories(cache, ec);
    paths.writable.push_back(cache);
    const fs::path key = package::default_cache_key_file();
    if (!key.empty()) paths.readable.push_back(key);
  } catch (const Error&) {
    // An unusable cache directory is reported where the cache is used.
  }
  const auto sandbox = package::enter_run_sandbox(paths);
  const char* require = std::getenv("KGATE_REQUIRE_SANDBOX");
  if (sandbox.kind == package::SandboxKind::none) {
    if (require && std::string(require) == "1")
      throw Error(ErrorKind::usage,
                  "the worker could not enter its sandbox (" + sandbox.detail +
                      ") and --require-sandbox is set: kernels and references run only "
                      "sandboxed (Landlock, Linux 5.13 or later)");
    return std::string("none: ") + sandbox.detail;
  }
  return std::string(package::sandbox_kind_name(sandbox.kind)) +
         (sandbox.detail.empty() ? "" : " (" + sandbox.detail + ")");
}

KernelReport failed_kernel_report(const std::string& name, const std::string& op,
                                  const std::string& backend, const std::string& source,
                                  const std::string& failure, double seconds) {
  KernelReport k;
  k.name = name;
  k.op = op;
  k.backend = backend;
  k.source = source;
  k.outcome = Outcome::failed;
  k.message = failure;
  k.seconds = seconds;
  return k;
}

}  // namespace kgate::cli
