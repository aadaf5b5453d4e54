// kgate-nvrtc-worker: compiles one package in a sandbox (nvrtc_worker.hpp). Started by kgate with
// an empty environment; reads one request on stdin, writes one response on stdout. Not for direct
// use.
#include <dlfcn.h>
#include <nvrtc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <new>
#include <string>

#include "runtime/package/compile_sandbox.hpp"
#include "runtime/package/nvrtc_worker.hpp"

namespace {

using kgate::package::NvrtcRequest;
using kgate::package::NvrtcResponse;

void set_limit(int resource, rlim_t value) {
  rlimit lim{value, value};
  ::setrlimit(resource, &lim);
}

bool read_all(int fd, std::string& out) {
  char buf[65536];
  for (;;) {
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r > 0) out.append(buf, static_cast<std::size_t>(r));
    else if (r == 0) return true;
    else if (errno != EINTR) return false;
  }
}

bool write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w > 0) done += static_cast<std::size_t>(w);
    else if (errno != EINTR) return false;
  }
  return true;
}

/// Loads everything NVRTC reads from disk while it compiles (its builtins library), so that the
/// sandbox can hide the disk: a tiny program is compiled once before the sandbox is entered.
void warm_up(const NvrtcRequest& request) {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) == NVRTC_SUCCESS) {
    const std::string builtins =
        "libnvrtc-builtins.so." + std::to_string(major) + "." + std::to_string(minor);
    ::dlopen(builtins.c_str(), RTLD_NOW | RTLD_GLOBAL);
  }
  nvrtcProgram p = nullptr;
  if (nvrtcCreateProgram(&p, "__global__ void kgate_warm_up() {}\n", "kgate_warm_up.cu", 0, nullptr,
                         nullptr) != NVRTC_SUCCESS)
    return;
  std::vector<const char*> options;
  for (const auto& o : request.options)
    if (o.rfind("--gpu-architecture=", 0) == 0) options.push_back(o.c_str());
  nvrtcCompileProgram(p, static_cast<int>(options.size()), options.data());
  nvrtcDestroyProgram(&p);
}

int respond(const NvrtcResponse& r) {
  return write_all(1, kgate::package::encode_response(r)) ? 0 : 2;
}

}  // namespace

int main() {
  set_limit(RLIMIT_CORE, 0);
  std::string bytes;
  NvrtcRequest request;
  if (!read_all(0, bytes) || !kgate::package::decode_request(bytes, request)) {
    std::fputs(
        "kgate-nvrtc-worker: expected one request on stdin (this program is started by kgate)\n",
        stderr);
    return 2;
  }
  bytes.clear();
  bytes.shrink_to_fit();
  warm_up(request);

  std::vector<std::filesystem::path> dirs(request.readable_dirs.begin(),
                                          request.readable_dirs.end());
  kgate::package::SandboxOutcome sandbox;
  if (request.sandbox) sandbox = kgate::package::enter_compile_sandbox(dirs);
  else sandbox.detail = "turned off by the caller";
  NvrtcResponse response;
  if (sandbox.kind == kgate::package::SandboxKind::none && request.require_sandbox) {
    response.status = NvrtcResponse::Status::no_sandbox;
    response.sandbox = sandbox.kind;
    response.sandbox_detail = sandbox.detail;
    return respond(response);
  }
  // The compile may write no file (its memory and time are watched by kgate).
  set_limit(RLIMIT_FSIZE, 0);
  set_limit(RLIMIT_NOFILE, 64);
  try {
    response = kgate::package::nvrtc_compile_in_process(request);
  } catch (const std::bad_alloc&) {
    response = NvrtcResponse{};
    response.status = NvrtcResponse::Status::out_of_memory;
    response.error = "out of memory";
  }
  response.sandbox = sandbox.kind;
  response.sandbox_detail = sandbox.detail;
  return respond(response);
}
