// kgate_gpu_or_skip [--skip-exit=N] [--runs-without-gpu=GLOB]... -- COMMAND [ARG...]
//
// The launcher of tests that need a CUDA device. With one visible (cudaGetDeviceCount > 0), it
// becomes COMMAND (execv). Without one, it prints GoogleTest's "[  SKIPPED ]" line, which GPU
// tests' SKIP_REGULAR_EXPRESSION reads, and exits N (default 0) without starting COMMAND: the test
// would only find no device and skip itself, after loading LibTorch (about 0.4 s a test; a build
// has about 250 such tests, all skipped on a machine without a GPU).
//
// COMMAND still runs without a device when it lists tests (--gtest_list_tests, for test discovery)
// or when its --gtest_filter names only tests matching a --runs-without-gpu glob (tests of a GPU
// executable that do not need the GPU).
#include <cuda_runtime.h>
#include <fnmatch.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Whether every test named by a positive-only --gtest_filter matches one of the globs.
bool filter_runs_without_gpu(const std::string& filter, const std::vector<std::string>& globs) {
  if (filter.empty() || globs.empty() || filter.find('-') != std::string::npos) return false;
  size_t begin = 0;
  while (begin <= filter.size()) {
    size_t end = filter.find(':', begin);
    if (end == std::string::npos) end = filter.size();
    const std::string name = filter.substr(begin, end - begin);
    bool matched = false;
    for (const auto& glob : globs) matched = matched || fnmatch(glob.c_str(), name.c_str(), 0) == 0;
    if (!matched) return false;
    begin = end + 1;
  }
  return true;
}

[[noreturn]] void run(char** command) {
  execv(command[0], command);
  std::fprintf(stderr, "kgate_gpu_or_skip: cannot run %s: %s\n", command[0], std::strerror(errno));
  std::exit(127);
}

}  // namespace

int main(int argc, char** argv) {
  int skip_exit = 0;
  std::vector<std::string> globs;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (starts_with(arg, "--skip-exit=")) {
      skip_exit = std::atoi(arg.c_str() + 12);
    } else if (starts_with(arg, "--runs-without-gpu=")) {
      globs.push_back(arg.substr(19));
    } else {
      std::fprintf(stderr,
                   "kgate_gpu_or_skip: unknown option '%s' (usage: kgate_gpu_or_skip "
                   "[--skip-exit=N] [--runs-without-gpu=GLOB]... -- COMMAND [ARG...])\n",
                   arg.c_str());
      return 2;
    }
  }
  if (i >= argc) {
    std::fprintf(stderr, "kgate_gpu_or_skip: no command after '--'\n");
    return 2;
  }
  char** command = argv + i;
  std::string filter;
  for (int j = i + 1; j < argc; ++j) {
    const std::string arg = argv[j];
    if (arg == "--gtest_list_tests") run(command);
    if (starts_with(arg, "--gtest_filter=")) filter = arg.substr(15);
  }
  if (filter_runs_without_gpu(filter, globs)) run(command);
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status == cudaSuccess && devices > 0) run(command);
  std::printf("[  SKIPPED ] no CUDA device (cudaGetDeviceCount: %s): %s%s%s not started\n",
              status == cudaSuccess ? "0 devices" : cudaGetErrorString(status), command[0],
              filter.empty() ? "" : " --gtest_filter=", filter.c_str());
  return skip_exit;
}
