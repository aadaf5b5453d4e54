// Worker processes under a watchdog.
#include "cli/worker.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

extern char** environ;

namespace kgate::cli {

WorkerResult run_worker(const std::vector<std::string>& args, const std::string& report_path, double timeout_s) {
  WorkerResult r;
  std::remove(report_path.c_str());
  std::vector<std::string> argv_storage = {"kgate"};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  // No shell: the binary and its arguments go straight to posix_spawn.
  pid_t pid = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ);
  if (rc != 0) {
    r.failure = std::string("could not start a worker process: ") + std::strerror(rc);
    return r;
  }
  int status = 0;
  bool killed = false;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      r.failure = std::string("waitpid failed: ") + std::strerror(errno);
      return r;
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!killed && elapsed > timeout_s) {
      kill(pid, SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (killed) {
    r.failure = "hung: no result after " + std::to_string(static_cast<int>(timeout_s)) +
                " s, the worker was killed (raise --kernel-timeout if the kernel is just slow)";
    return r;
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    r.failure = std::string("the worker crashed with signal ") + std::to_string(sig) + " (" + strsignal(sig) + ")";
    return r;
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream f(report_path);
  if (!f) {
    r.failure = "the worker exited with code " + std::to_string(r.exit_code) + " without writing a report";
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

KernelReport failed_kernel_report(const std::string& name, const std::string& op, const std::string& backend,
                                  const std::string& source, const std::string& failure, double seconds) {
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
