// Worker processes under a watchdog.
#include "cli/worker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include "core/cost.hpp"
#include "core/error.hpp"
#include "runtime/package/compile_sandbox.hpp"
#include "runtime/package/nvrtc_cache.hpp"

extern char** environ;

namespace kgate::cli {

namespace {

// A worker's process, started: its pid and the pipe its stdout and stderr go to.
struct Started {
  pid_t pid = -1;
  int output = -1;
  std::string failure;  ///< why it could not be started (pid -1)
  double ahead_s = -1;  ///< started ahead: how long it had waited
};

// The environment a worker gets: the one a kernel or a reference may see (the CI job's tokens are
// not in it), and `extra`.
std::vector<std::string> worker_env(const std::vector<std::string>& extra) {
  std::vector<std::string> env = package::worker_environment(environ);
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

// Starts `program` with `args` (argv[0] first) and `env`; stdout and stderr go to a pipe, and
// stdin is `stdin_fd` (-1: the parent's).
Started start_process(const std::string& program, std::vector<std::string> args,
                      std::vector<std::string> env, int stdin_fd = -1) {
  Started r;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    r.failure = std::string("could not make a pipe for a worker: ") + std::strerror(errno);
    return r;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdin_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, out[1], 2);
  // No shell: the binary and its arguments go straight to posix_spawn.
  const int rc = posix_spawn(&r.pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    r.pid = -1;
    r.failure = std::string("could not start a worker process: ") + std::strerror(rc);
    return r;
  }
  r.output = out[0];
  return r;
}

// Workers started ahead (keep_workers_ahead): each waits, its libraries loaded, for its arguments
// on a socket that is its stdin.
struct Ahead {
  pid_t pid = -1;
  int control = -1;  ///< the parent's end of the worker's stdin
  int output = -1;
  std::vector<std::string> env;  ///< the environment it was started with
  std::chrono::steady_clock::time_point started;
};

std::mutex ahead_mutex;
std::vector<Ahead> ahead;  // oldest first
size_t ahead_wanted = 0;

bool workers_ahead_off() {
  const char* off = std::getenv("KGATE_NO_WORKERS_AHEAD");
  return off && std::string(off) == "1";
}

// Ends a worker waiting ahead; `reaped`: it has exited and been waited for already (its pid may
// be another process's by now: never signalled).
void end_ahead(Ahead& a, bool reaped = false) {
  close(a.control);
  if (!reaped) {
    kill(a.pid, SIGKILL);
    int status = 0;
    while (waitpid(a.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  close(a.output);
}

// Starts or ends workers ahead until `ahead_wanted` wait (ahead_mutex held).
void refill_ahead() {
  while (ahead.size() > ahead_wanted) {
    end_ahead(ahead.back());
    ahead.pop_back();
  }
  while (ahead.size() < ahead_wanted) {
    int control[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, control) != 0) return;
    Ahead a;
    a.env = worker_env({});
    const Started s =
        start_process("/proc/self/exe", {"kgate", kStandbyArgument}, a.env, control[1]);
    close(control[1]);
    if (s.pid < 0) {
      close(control[0]);
      return;  // the worker is started when it is needed, and says why it cannot be
    }
    a.pid = s.pid;
    a.output = s.output;
    a.control = control[0];
    a.started = std::chrono::steady_clock::now();
    ahead.push_back(std::move(a));
  }
}

// A worker started ahead, given `args` (after "kgate"), when one waits with environment `env`.
std::optional<Started> take_ahead(const std::vector<std::string>& args,
                                  const std::vector<std::string>& env) {
  std::lock_guard<std::mutex> lock(ahead_mutex);
  std::optional<Started> taken;
  while (!taken && !ahead.empty()) {
    Ahead a = std::move(ahead.front());
    ahead.erase(ahead.begin());
    int status = 0;
    const pid_t gone = waitpid(a.pid, &status, WNOHANG);
    if (gone != 0 || a.env != env) {  // exited (or unknown), or not this work's
      end_ahead(a, gone == a.pid);
      continue;
    }
    // When it was given its work (its startup counts from then), then its arguments.
    std::string message = std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::steady_clock::now().time_since_epoch())
                                             .count());
    message.push_back('\0');
    for (const auto& arg : args) message.append(arg).push_back('\0');
    // Never blocking: arguments that do not fit the socket's buffer at once (far more than a
    // worker's) go to a worker started for them instead of waiting on one that does not read.
    bool sent = true;
    for (size_t at = 0; sent && at < message.size();) {
      const ssize_t n =
          send(a.control, message.data() + at, message.size() - at, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) at += static_cast<size_t>(n);
      else sent = n < 0 && errno == EINTR;
    }
    if (!sent) {
      end_ahead(a);
      continue;
    }
    close(a.control);  // the end of its arguments
    taken = Started{
        a.pid,
        a.output,
        {},
        std::chrono::duration<double>(std::chrono::steady_clock::now() - a.started).count()};
  }
  refill_ahead();
  return taken;
}

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
  std::vector<std::string> env = worker_env(extra_env);
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<Started> started;
  if (wrapper.empty() && extra_env.empty()) started = take_ahead(args, env);
  if (!started) started = start_process(program, std::move(argv_storage), std::move(env));
  if (started->pid < 0) {
    r.failure = started->failure;
    return r;
  }
  const pid_t pid = started->pid;
  const int output = started->output;
  r.started_ahead_s = started->ahead_s;
  const int flags = fcntl(output, F_GETFL);
  fcntl(output, F_SETFL, flags | O_NONBLOCK);
  bool open_pipe = true;
  const auto drain = [&] {
    char buf[65536];
    for (;;) {
      const ssize_t n = read(output, buf, sizeof buf);
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
      close(output);
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
    pollfd p{output, POLLIN, 0};
    if (open_pipe && poll(&p, 1, 20) > 0) drain();
    else if (!open_pipe) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // What is left in the pipe; a process the worker started could keep it open, so only briefly.
  for (int i = 0; i < 50 && open_pipe; ++i) {
    pollfd p{output, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) break;
    drain();
  }
  close(output);
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

void keep_workers_ahead(size_t count) {
  std::lock_guard<std::mutex> lock(ahead_mutex);
  ahead_wanted = workers_ahead_off() ? 0 : count;  // from the next worker started on
}

void end_workers_ahead() {
  std::lock_guard<std::mutex> lock(ahead_mutex);
  ahead_wanted = 0;
  refill_ahead();
}

std::vector<std::string> wait_for_work(const char* argv0) {
  std::string message;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(0, buf, sizeof buf);
    if (n > 0) message.append(buf, static_cast<size_t>(n));
    else if (n == 0 || errno != EINTR) break;
  }
  std::vector<std::string> args;
  if (message.empty()) return args;  // ended without work
  const size_t given_end = message.find('\0');
  if (given_end == std::string::npos)
    throw Error(ErrorKind::usage, std::string(kStandbyArgument) +
                                      " read something that is not a worker's arguments from "
                                      "stdin: it is kgate check's own; run kgate check instead");
  args.push_back(argv0);
  for (size_t at = given_end + 1; at < message.size();) {
    const size_t end = std::min(message.find('\0', at), message.size());
    args.push_back(message.substr(at, end - at));
    at = end + 1;
  }
  // What it reads from now on is nothing, as a worker started for its work (the parent's stdin
  // is no worker's to read); its startup counts from here.
  const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, 0);
    close(null);
  }
  // The clock is the machine's monotonic one, the parent's too.
  cost::count_age_from(std::chrono::steady_clock::time_point(
      std::chrono::nanoseconds(std::strtoll(message.c_str(), nullptr, 10))));
  return args;
}

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
