// The NVRTC compile worker: wire format, the parent's side (spawn, feed, watch, kill) and the
// compile itself (run inside the worker).
#include "runtime/package/nvrtc_worker.hpp"

#include <fcntl.h>
#include <nvrtc.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <system_error>

#include "core/error.hpp"

#ifndef KGATE_NVRTC_WORKER_BUILD_PATH
#define KGATE_NVRTC_WORKER_BUILD_PATH ""
#endif

namespace kgate::package {

namespace fs = std::filesystem;

namespace {

constexpr const char* kRequestTag = "kgate-nvrtc-request/1";
constexpr const char* kResponseTag = "kgate-nvrtc-response/1";
constexpr const char* kWorkerName = "kgate-nvrtc-worker";
/// A response larger than this is not a CUBIN kgate can use (and not read further).
constexpr std::size_t kMaxResponseBytes = 512ULL << 20;
constexpr std::size_t kMaxStderrBytes = 16 * 1024;

// ---- wire format -------------------------------------------------------------------------------

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_str(std::string& out, const std::string& s) {
  put_u64(out, s.size());
  out += s;
}
void put_list(std::string& out, const std::vector<std::string>& v) {
  put_u64(out, v.size());
  for (const auto& s : v) put_str(out, s);
}

struct Reader {
  const std::string& bytes;
  std::size_t pos = 0;
  bool ok = true;
  uint64_t u64() {
    if (!ok || bytes.size() - pos < 8) return ok = false, 0;
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v |= uint64_t(static_cast<unsigned char>(bytes[pos + i])) << (8 * i);
    pos += 8;
    return v;
  }
  std::string str() {
    const uint64_t n = u64();
    if (!ok || n > bytes.size() - pos) return ok = false, std::string();
    std::string s = bytes.substr(pos, n);
    pos += n;
    return s;
  }
  std::vector<std::string> list() {
    const uint64_t n = u64();
    std::vector<std::string> v;
    if (!ok || n > bytes.size()) return ok = false, v;
    for (uint64_t i = 0; ok && i < n; ++i) v.push_back(str());
    return v;
  }
};

// ---- the parent's side
// ---------------------------------------------------------------------------

bool set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

fs::path self_executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

/// Resident bytes of a process from its /proc/PID/statm (0 when it cannot be read).
uint64_t resident_bytes(const std::string& statm, long page) {
  FILE* f = std::fopen(statm.c_str(), "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<uint64_t>(page) : 0;
}

bool is_executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

}  // namespace

std::string cap_compiler_log(const std::string& log) {
  if (log.size() <= kMaxCompilerLogBytes) return log;
  const std::size_t head = kMaxCompilerLogBytes * 3 / 4, tail = kMaxCompilerLogBytes / 4;
  return log.substr(0, head) + "\n[... " + std::to_string(log.size() - head - tail) +
         " bytes of the compiler log dropped ...]\n" + log.substr(log.size() - tail);
}

std::string encode_request(const NvrtcRequest& r) {
  std::string out;
  put_str(out, kRequestTag);
  put_str(out, r.main_name);
  put_str(out, r.main_source);
  put_list(out, r.header_names);
  put_list(out, r.header_sources);
  put_list(out, r.options);
  put_list(out, r.name_expressions);
  put_list(out, r.readable_dirs);
  put_u64(out, r.require_sandbox ? 1 : 0);
  put_u64(out, r.sandbox ? 1 : 0);
  return out;
}

bool decode_request(const std::string& bytes, NvrtcRequest& r) {
  Reader in{bytes};
  if (in.str() != kRequestTag) return false;
  r.main_name = in.str();
  r.main_source = in.str();
  r.header_names = in.list();
  r.header_sources = in.list();
  r.options = in.list();
  r.name_expressions = in.list();
  r.readable_dirs = in.list();
  r.require_sandbox = in.u64() != 0;
  r.sandbox = in.u64() != 0;
  return in.ok && in.pos == bytes.size() && r.header_names.size() == r.header_sources.size();
}

std::string encode_response(const NvrtcResponse& r) {
  std::string out;
  put_str(out, kResponseTag);
  put_u64(out, static_cast<uint64_t>(r.status));
  put_str(out, r.error);
  put_str(out, r.log);
  put_u64(out, r.lowered_names.size());
  for (const auto& [k, v] : r.lowered_names) {
    put_str(out, k);
    put_str(out, v);
  }
  put_str(out, r.cubin);
  put_u64(out, static_cast<uint64_t>(r.compile_seconds * 1e9));
  put_u64(out, static_cast<uint64_t>(r.sandbox));
  put_str(out, r.sandbox_detail);
  return out;
}

bool decode_response(const std::string& bytes, NvrtcResponse& r) {
  Reader in{bytes};
  if (in.str() != kResponseTag) return false;
  const uint64_t status = in.u64();
  if (status > static_cast<uint64_t>(NvrtcResponse::Status::internal)) return false;
  r.status = static_cast<NvrtcResponse::Status>(status);
  r.error = in.str();
  r.log = in.str();
  const uint64_t n = in.u64();
  if (!in.ok || n > bytes.size()) return false;
  for (uint64_t i = 0; in.ok && i < n; ++i) {
    std::string k = in.str();
    r.lowered_names[k] = in.str();
  }
  r.cubin = in.str();
  r.compile_seconds = static_cast<double>(in.u64()) * 1e-9;
  const uint64_t sandbox = in.u64();
  if (sandbox > static_cast<uint64_t>(SandboxKind::none)) return false;
  r.sandbox = static_cast<SandboxKind>(sandbox);
  r.sandbox_detail = in.str();
  return in.ok && in.pos == bytes.size();
}

fs::path nvrtc_worker_path() {
  std::vector<fs::path> tried;
  if (const char* env = std::getenv("KGATE_NVRTC_WORKER"); env && *env) {
    if (is_executable(env)) return env;
    tried.emplace_back(env);
  }
  const fs::path here = self_executable_dir();
  if (!here.empty()) {
    for (const fs::path& p :
         {here / kWorkerName, here / ".." / "libexec" / "kgate" / kWorkerName}) {
      if (is_executable(p)) return p.lexically_normal();
      tried.push_back(p.lexically_normal());
    }
  }
  if (const char* built = KGATE_NVRTC_WORKER_BUILD_PATH; *built) {
    if (is_executable(built)) return built;
    tried.emplace_back(built);
  }
  std::string where;
  for (const auto& t : tried) where += (where.empty() ? "" : ", ") + t.string();
  throw Error(ErrorKind::internal,
              std::string("the package compiler ") + kWorkerName + " was not found (looked at: " +
                  where + "); install it next to kgate or set KGATE_NVRTC_WORKER to its path");
}

WorkerRun run_nvrtc_worker(const NvrtcRequest& request, const WorkerLimits& limits) {
  WorkerRun run;
  const auto t0 = std::chrono::steady_clock::now();
  const fs::path exe = nvrtc_worker_path();
  int io[2], err[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, io) != 0)
    throw Error(ErrorKind::internal, std::string("socketpair: ") + std::strerror(errno));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(io[0]);
    ::close(io[1]);
    throw Error(ErrorKind::internal, std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, io[1], 0);
  posix_spawn_file_actions_adddup2(&actions, io[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t defaults;
  sigfillset(&defaults);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  const std::string exe_s = exe.string();
  char* argv[] = {const_cast<char*>(exe_s.c_str()), nullptr};
  char* envp[] = {nullptr};  // an empty environment: nothing of the runner's to leak
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, exe_s.c_str(), &actions, &attr, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(io[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(io[0]);
    ::close(err[0]);
    throw Error(ErrorKind::internal,
                "cannot start the package compiler " + exe_s + ": " + std::strerror(rc));
  }
  set_nonblocking(io[0]);
  set_nonblocking(err[0]);
  // Memory is bounded by the worker's resident size, read from /proc while it runs: an
  // address-space limit (RLIMIT_AS) is no bound on use, and NVRTC reserves more address space on
  // larger machines (8 GiB of it failed every compile on a 16-core GPU host).
  const std::string statm = "/proc/" + std::to_string(pid) + "/statm";
  const long page = ::sysconf(_SC_PAGESIZE);

  const std::string out = encode_request(request);
  std::size_t written = 0;
  std::string response;
  bool io_open = true, err_open = true, overflow = false;
  const auto deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(limits.timeout_seconds));
  while (io_open || err_open) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      run.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    if (limits.memory_limit_bytes && resident_bytes(statm, page) > limits.memory_limit_bytes) {
      run.memory_exceeded = true;
      ::kill(pid, SIGKILL);
      break;
    }
    const int wait_ms = static_cast<int>(std::min<int64_t>(
        50, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1));
    pollfd fds[2];
    int n = 0;
    if (io_open)
      fds[n++] = {io[0], static_cast<short>(POLLIN | (written < out.size() ? POLLOUT : 0)), 0};
    if (err_open) fds[n++] = {err[0], POLLIN, 0};
    if (::poll(fds, n, wait_ms) < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      if (!fds[i].revents) continue;
      char buf[65536];
      if (fds[i].fd == io[0]) {
        if ((fds[i].revents & POLLOUT) && written < out.size()) {
          const ssize_t w = ::send(io[0], out.data() + written, out.size() - written, MSG_NOSIGNAL);
          if (w > 0) written += static_cast<std::size_t>(w);
          if (written == out.size() || (w < 0 && errno != EAGAIN)) {
            written = out.size();
            ::shutdown(io[0], SHUT_WR);  // end of request
          }
        }
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
          const ssize_t r = ::read(io[0], buf, sizeof buf);
          if (r > 0) {
            if (response.size() + static_cast<std::size_t>(r) > kMaxResponseBytes) {
              overflow = true;
              ::kill(pid, SIGKILL);
            } else {
              response.append(buf, static_cast<std::size_t>(r));
            }
          } else if (r == 0 || errno != EAGAIN) {
            io_open = false;
          }
        }
      } else {
        const ssize_t r = ::read(err[0], buf, sizeof buf);
        if (r > 0) {
          if (run.stderr_text.size() < kMaxStderrBytes)
            run.stderr_text.append(buf,
                                   std::min<std::size_t>(static_cast<std::size_t>(r),
                                                         kMaxStderrBytes - run.stderr_text.size()));
        } else if (r == 0 || errno != EAGAIN) {
          err_open = false;
        }
      }
    }
  }
  ::close(io[0]);
  ::close(err[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) run.signal = WTERMSIG(status);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!run.timed_out && !run.memory_exceeded && !overflow)
    run.answered = decode_response(response, run.response);
  return run;
}

// ---- the worker's side
// ---------------------------------------------------------------------------

namespace {

struct ProgramGuard {
  nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program) nvrtcDestroyProgram(&program);
  }
};

std::string program_log(nvrtcProgram program) {
  std::size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size == 0) return {};
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return {};
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

NvrtcResponse api_failure(const char* call, nvrtcResult rc) {
  NvrtcResponse r;
  r.status = NvrtcResponse::Status::internal;
  r.error = std::string(call) + " failed: " + nvrtcGetErrorString(rc);
  return r;
}

}  // namespace

NvrtcResponse nvrtc_compile_in_process(const NvrtcRequest& in) {
  std::vector<const char*> header_names, header_sources, options;
  for (const auto& s : in.header_names) header_names.push_back(s.c_str());
  for (const auto& s : in.header_sources) header_sources.push_back(s.c_str());
  for (const auto& s : in.options) options.push_back(s.c_str());
  try {
    ProgramGuard guard;
    nvrtcResult rc = nvrtcCreateProgram(&guard.program, in.main_source.c_str(),
                                        in.main_name.c_str(), static_cast<int>(header_names.size()),
                                        header_sources.data(), header_names.data());
    if (rc != NVRTC_SUCCESS) return api_failure("nvrtcCreateProgram", rc);
    for (const auto& n : in.name_expressions)
      if ((rc = nvrtcAddNameExpression(guard.program, n.c_str())) != NVRTC_SUCCESS)
        return api_failure("nvrtcAddNameExpression", rc);
    NvrtcResponse r;
    const auto t0 = std::chrono::steady_clock::now();
    rc = nvrtcCompileProgram(guard.program, static_cast<int>(options.size()), options.data());
    r.compile_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.log = cap_compiler_log(program_log(guard.program));
    if (rc == NVRTC_ERROR_OUT_OF_MEMORY) {
      r.status = NvrtcResponse::Status::out_of_memory;
      r.error = nvrtcGetErrorString(rc);
      return r;
    }
    if (rc != NVRTC_SUCCESS) {
      r.status = NvrtcResponse::Status::compile_error;
      r.error = nvrtcGetErrorString(rc);
      return r;
    }
    for (const auto& n : in.name_expressions) {
      const char* lowered = nullptr;
      if (nvrtcGetLoweredName(guard.program, n.c_str(), &lowered) != NVRTC_SUCCESS || !lowered) {
        r.status = NvrtcResponse::Status::missing_name;
        r.error = n;
        return r;
      }
      r.lowered_names[n] = lowered;
    }
    std::size_t size = 0;
    if ((rc = nvrtcGetCUBINSize(guard.program, &size)) != NVRTC_SUCCESS)
      return api_failure("nvrtcGetCUBINSize", rc);
    r.cubin.assign(size, '\0');
    if ((rc = nvrtcGetCUBIN(guard.program, r.cubin.data())) != NVRTC_SUCCESS)
      return api_failure("nvrtcGetCUBIN", rc);
    r.status = NvrtcResponse::Status::ok;
    return r;
  } catch (const std::bad_alloc&) {
    NvrtcResponse r;
    r.status = NvrtcResponse::Status::out_of_memory;
    r.error = "out of memory";
    return r;
  }
}

}  // namespace kgate::package
