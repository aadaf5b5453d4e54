// kgate pack's nvcc build (nvcc_build.hpp): the generated translation unit, the nvcc command, its
// run without a shell, and the record of what ran.
#include "runtime/package/nvcc_build.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <system_error>

#include "core/error.hpp"
#include "core/safe_text.hpp"

#ifndef KGATE_CUDA_INCLUDE_DIR
#define KGATE_CUDA_INCLUDE_DIR ""
#endif

extern char** environ;

namespace kgate::package {

namespace fs = std::filesystem;

namespace {

/// Runs `argv` in `dir` (no shell), its stdout and stderr together into `output`; the exit status,
/// or -1 when it could not be started.
int run_tool(const std::vector<std::string>& argv, const fs::path& dir, std::string& output) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  if (!dir.empty()) posix_spawn_file_actions_addchdir_np(&actions, dir.c_str());
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (rc != 0) {
    ::close(pipe_fds[0]);
    output = std::strerror(rc);
    return -1;
  }
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
    if (n > 0) {
      if (output.size() < (1u << 20)) output.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

/// The release and build lines of `nvcc --version` ("Cuda compilation tools, release 13.0,
/// V13.0.88; Build cuda_13.0.r13.0/compiler.36424714_0").
std::string nvcc_version_text(const std::string& out) {
  std::string kept;
  std::size_t at = 0;
  while (at < out.size()) {
    const std::size_t end = std::min(out.find('\n', at), out.size());
    const std::string line = out.substr(at, end - at);
    if (line.rfind("Cuda compilation tools", 0) == 0 || line.rfind("Build ", 0) == 0)
      kept += (kept.empty() ? "" : "; ") + line;
    at = end + 1;
  }
  return kept.empty() ? first_line(out) : kept;
}

bool executable(const fs::path& p) {
  std::error_code ec;
  return !p.empty() && fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

/// A kernel name expression as C++ may spell it: a name, template arguments, a parameter list;
/// nothing that would end the expression in the generated unit.
bool plausible_name(const std::string& name) {
  static const std::regex re(R"([A-Za-z_:][A-Za-z0-9_:<>,\s\*&\(\)\.\-\+]*)");
  return name.size() < 1024 && std::regex_match(name, re);
}

}  // namespace

std::string nvcc_flag_problem(const std::string& flag) {
  static const std::regex ok(
      R"(-std=c\+\+(11|14|17|20)|-O[0-3]|-D[A-Za-z_][A-Za-z0-9_]*(=[\x20-\x7e]*)?|-U[A-Za-z_][A-Za-z0-9_]*|-lineinfo|--?use_fast_math|--(fmad|ftz|prec-div|prec-sqrt)=(true|false)|-maxrregcount=[0-9]{1,3}|--expt-relaxed-constexpr|--(expt-)?extended-lambda|--extra-device-vectorization|-w)");
  if (std::regex_match(flag, ok)) return "";
  return "nvcc flag " + quote_untrusted(flag) +
         " is not allowed; expected one of -std=c++NN, -O0..-O3, -DNAME[=VALUE], -UNAME, "
         "-lineinfo, --use_fast_math, --fmad/--ftz/--prec-div/--prec-sqrt=true|false, "
         "-maxrregcount=N, --expt-relaxed-constexpr, --extended-lambda, "
         "--extra-device-vectorization, -w (kgate passes the include_dirs and the archs itself)";
}

fs::path find_nvcc() {
  std::vector<fs::path> candidates;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* env = std::getenv(var); env && *env)
      candidates.push_back(fs::path(env) / "bin" / "nvcc");
  if (const char* built = KGATE_CUDA_INCLUDE_DIR; *built)
    candidates.push_back(fs::path(built).parent_path() / "bin" / "nvcc");
  candidates.emplace_back("/usr/local/cuda/bin/nvcc");
  for (const auto& c : candidates)
    if (executable(c)) return c;
  return {};
}

fs::path find_host_compiler() {
  if (const char* env = std::getenv("CUDAHOSTCXX"); env && *env) return env;
  const char* path = std::getenv("PATH");
  const std::string dirs = path ? path : "/usr/bin:/bin";
  for (const char* name : {"g++", "c++", "clang++"}) {
    std::size_t at = 0;
    while (at <= dirs.size()) {
      const std::size_t end = std::min(dirs.find(':', at), dirs.size());
      const fs::path candidate = fs::path(dirs.substr(at, end - at)) / name;
      if (end > at && candidate.is_absolute() && executable(candidate)) return candidate;
      at = end + 1;
    }
  }
  return {};
}

BuildRecord nvcc_build(const fs::path& dir, const std::string& name,
                       const std::vector<std::string>& sources,
                       const std::vector<std::string>& include_dirs,
                       const std::vector<std::string>& kernels, const BuildSpec& spec,
                       const std::string& manifest) {
  const auto fail = [&](const std::string& field, const std::string& message) {
    throw Error(ErrorKind::package, manifest + ": " + field + ": " + message);
  };
  static const std::regex arch_re("sm_[0-9]{2,3}[af]?");
  for (std::size_t i = 0; i < spec.archs.size(); ++i)
    if (!std::regex_match(spec.archs[i], arch_re))
      fail("build.archs[" + std::to_string(i) + "]",
           quote_untrusted(spec.archs[i]) + " is not a GPU architecture such as \"sm_90\"");
  for (std::size_t i = 0; i < spec.flags.size(); ++i)
    if (const std::string err = nvcc_flag_problem(spec.flags[i]); !err.empty())
      fail("build.flags[" + std::to_string(i) + "]", err);
  if (sources.empty()) fail("sources", "missing; an nvcc build compiles the package's sources");
  const fs::path nvcc = find_nvcc();
  if (nvcc.empty())
    fail("build",
         "the package asks for an nvcc build, but no nvcc was found (looked in $CUDA_HOME/bin, "
         "$CUDA_PATH/bin and /usr/local/cuda/bin); install the CUDA toolkit or set CUDA_HOME");
  const fs::path ccbin = find_host_compiler();
  if (ccbin.empty())
    fail("build",
         "no host compiler for nvcc was found (g++, c++ or clang++ on PATH); set CUDAHOSTCXX");

  BuildRecord record;
  record.fatbin = std::string(kBuildDir) + "/" + name + ".fatbin";
  record.unit = std::string(kBuildDir) + "/kgate_build.cu";
  std::string unit =
      "// Written by kgate pack: the package's sources as one translation unit for nvcc";
  unit += spec.instantiate
              ? ", and the\n// address of every kernel its launches name, so that nvcc "
                "instantiates each template kernel.\n"
              : ".\n";
  for (const auto& s : sources) unit += "#include \"../" + s + "\"\n";
  if (spec.instantiate && !kernels.empty()) {
    unit += "\nnamespace {\n";
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      if (!plausible_name(kernels[i]))
        fail("launches", "kernel " + quote_untrusted(kernels[i]) +
                             " is not a C++ name an nvcc build can instantiate");
      unit += "[[maybe_unused]] auto* const kgate_kernel_" + std::to_string(i) + " = &" +
              kernels[i] + ";\n";
      record.kernels.push_back(kernels[i]);
    }
    unit += "}  // namespace\n";
  }
  std::error_code ec;
  fs::create_directories(dir / kBuildDir, ec);
  {
    std::ofstream f(dir / record.unit, std::ios::binary);
    f << unit;
    if (ec || !f) fail("build", "cannot write " + quote_untrusted((dir / record.unit).string()));
  }

  record.command = {nvcc.string(), "-fatbin", "--no-compress", "-ccbin", ccbin.string()};
  const std::vector<std::string> archs =
      spec.archs.empty() ? std::vector<std::string>{"sm_90"} : spec.archs;
  for (const auto& a : archs) {
    std::string number = a.substr(3);
    record.command.push_back("-gencode=arch=compute_" + number + ",code=" + a);
  }
  for (const auto& inc : include_dirs) record.command.push_back("-I" + inc);
  record.command.insert(record.command.end(), spec.flags.begin(), spec.flags.end());
  record.command.push_back("-o");
  record.command.push_back(record.fatbin);
  record.command.push_back(record.unit);

  std::string version;
  if (run_tool({nvcc.string(), "--version"}, {}, version) != 0)
    fail("build", quote_untrusted(nvcc.string()) + " --version failed: " + version);
  record.nvcc_version = nvcc_version_text(version);
  std::string host_version;
  if (run_tool({ccbin.string(), "--version"}, {}, host_version) != 0)
    fail("build", quote_untrusted(ccbin.string()) + " --version failed: " + host_version);
  record.host_compiler = ccbin.string();
  record.host_compiler_version = first_line(host_version);

  std::string output;
  const int rc = run_tool(record.command, dir, output);
  if (rc != 0) {
    std::string command;
    for (const auto& a : record.command) command += (command.empty() ? "" : " ") + a;
    fail("sources", "nvcc could not compile package " + quote_untrusted(name) + " (" + command +
                        (rc < 0 ? ": cannot start it" : ": exit " + std::to_string(rc)) + "):\n" +
                        safe_log_text(output));
  }
  if (!fs::is_regular_file(dir / record.fatbin, ec))
    fail("build", "nvcc wrote no " + quote_untrusted(record.fatbin));
  record.host_compiler_version = valid_utf8(record.host_compiler_version);
  record.nvcc_version = valid_utf8(record.nvcc_version);
  return record;
}

}  // namespace kgate::package
