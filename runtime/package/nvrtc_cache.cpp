// NVRTC compilation of packages and the content-addressed CUBIN cache.
//
// Cache layout: <cache_dir>/nvrtc/<key[0:2]>/<key>.cubin and <key>.json (lowered names, the CUBIN's
// SHA-256, provenance). Entries are written to a temporary file and renamed, the .json last, so a
// reader sees a complete entry or none; an entry whose CUBIN does not match its digest is a miss.
#include "runtime/package/nvrtc_cache.hpp"

#include <nvrtc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "runtime/cuda/check.hpp"
#include "runtime/package/package_files.hpp"
#include "runtime/package/sha256.hpp"

#ifndef KGATE_CUDA_INCLUDE_DIR
#define KGATE_CUDA_INCLUDE_DIR ""
#endif

namespace kgate::package {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kCacheFormat = "kgate-nvrtc-cache/1";
/// Name of the generated translation unit that #includes the sources of a multi-source package.
constexpr const char* kUnityName = "kgate_package_sources.cu";

std::atomic<uint64_t> g_compile_count{0};

std::string json_quote(const std::string& s) { return json(s).dump(); }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Destroys an NVRTC program on every path out.
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

/// Everything NVRTC sees, gathered from the package before hashing and compiling.
struct Inputs {
  std::string main_name;
  std::string main_source;
  std::vector<std::string> header_names;
  std::vector<std::string> header_sources;
  std::vector<std::string> options;
  std::vector<std::string> name_expressions;
};

bool read_inputs(const PackageManifest& m, const CompileOptions& opt, Inputs& in,
                 ManifestProblem& problem) {
  const std::string file = m.manifest_path.string();
  std::error_code ec;
  const fs::path root = m.dir.empty() ? fs::canonical(m.manifest_path.parent_path(), ec) : m.dir;
  if (ec) {
    problem = {file, "(package)", "cannot resolve the package directory: " + ec.message()};
    return false;
  }
  if (m.sources.empty()) {
    problem = {file, "sources", "missing; expected at least one source file"};
    return false;
  }
  std::vector<std::pair<std::string, std::string>> sources;
  for (std::size_t i = 0; i < m.sources.size(); ++i) {
    fs::path p;
    const std::string err = package_path_problem(root, m.sources[i], PathKind::source, &p);
    if (!err.empty()) {
      problem = {file, "sources[" + std::to_string(i) + "]", err};
      return false;
    }
    sources.emplace_back(fs::path(m.sources[i]).lexically_normal().generic_string(),
                         read_package_file(p));
  }
  std::vector<PackageFile> headers;
  std::size_t files = 0;
  std::uintmax_t bytes = 0;
  for (std::size_t i = 0; i < m.include_dirs.size(); ++i) {
    const std::string err = scan_include_dir(root, m.include_dirs[i], headers, files, bytes);
    if (!err.empty()) {
      problem = {file, "include_dirs[" + std::to_string(i) + "]", err};
      return false;
    }
  }
  if (sources.size() == 1) {
    in.main_name = sources[0].first;
    in.main_source = sources[0].second;
  } else {
    // One translation unit: the sources are headers of a generated file, in manifest order.
    in.main_name = kUnityName;
    for (const auto& [name, text] : sources) {
      in.main_source += "#include \"" + name + "\"\n";
      in.header_names.push_back(name);
      in.header_sources.push_back(text);
    }
  }
  for (const auto& h : headers) {
    // The first include dir that provides a name wins, as with -I order.
    if (std::find(in.header_names.begin(), in.header_names.end(), h.name) != in.header_names.end())
      continue;
    in.header_names.push_back(h.name);
    in.header_sources.push_back(read_package_file(h.path));
  }
  in.options.push_back("--gpu-architecture=" + opt.arch);
  for (std::size_t i = 0; i < m.nvrtc_options.size(); ++i) {
    const std::string err = nvrtc_option_problem(m.nvrtc_options[i]);
    if (!err.empty()) {
      problem = {file, "nvrtc_options[" + std::to_string(i) + "]", err};
      return false;
    }
    in.options.push_back(m.nvrtc_options[i]);
  }
  for (const auto& dir : opt.system_include_dirs) in.options.push_back("-I" + dir.string());
  in.name_expressions = m.name_expressions();
  return true;
}

std::string cache_key(const Inputs& in, const std::string& arch) {
  Sha256 h;
  h.field(kCacheFormat).field(nvrtc_version()).field(arch);
  h.field(std::to_string(in.options.size()));
  for (const auto& o : in.options) h.field(o);
  h.field(in.main_name).field(in.main_source);
  h.field(std::to_string(in.header_names.size()));
  for (std::size_t i = 0; i < in.header_names.size(); ++i)
    h.field(in.header_names[i]).field(in.header_sources[i]);
  h.field(std::to_string(in.name_expressions.size()));
  for (const auto& n : in.name_expressions) h.field(n);
  return h.hex();
}

bool read_binary(const fs::path& p, std::string& out) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return false;
  out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return !f.bad();
}

/// Writes `bytes` to `p` through a temporary file and a rename; false on any failure.
bool write_atomic(const fs::path& p, const std::string& bytes) {
  static std::atomic<uint64_t> serial{0};
  const fs::path tmp =
      p.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial.fetch_add(1));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return false;
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) {
      f.close();
      std::error_code ec;
      fs::remove(tmp, ec);
      return false;
    }
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) fs::remove(tmp, ec);
  return !ec;
}

/// Reads a cache entry; false when it is missing, incomplete or corrupt.
bool load_entry(const fs::path& cubin_path, const fs::path& meta_path, CompileResult& r) {
  std::string meta_text;
  if (!read_binary(meta_path, meta_text) || !read_binary(cubin_path, r.cubin)) return false;
  try {
    const json meta = json::parse(meta_text);
    if (meta.at("format").get<std::string>() != kCacheFormat) return false;
    if (meta.at("cubin_sha256").get<std::string>() != sha256_hex(r.cubin)) return false;
    r.lowered_names = meta.at("lowered_names").get<std::map<std::string, std::string>>();
  } catch (const json::exception&) {
    return false;
  }
  return true;
}

bool compile(const PackageManifest& m, const CompileOptions& opt, const Inputs& in,
             CompileResult& r, ManifestProblem& problem) {
  std::vector<const char*> header_names, header_sources, options;
  for (const auto& s : in.header_names) header_names.push_back(s.c_str());
  for (const auto& s : in.header_sources) header_sources.push_back(s.c_str());
  for (const auto& s : in.options) options.push_back(s.c_str());

  ProgramGuard guard;
  KGATE_NVRTC_CALL(nvrtcCreateProgram(&guard.program, in.main_source.c_str(), in.main_name.c_str(),
                                      static_cast<int>(header_names.size()), header_sources.data(),
                                      header_names.data()),
                   std::string());
  for (const auto& n : in.name_expressions)
    KGATE_NVRTC_CALL(nvrtcAddNameExpression(guard.program, n.c_str()), std::string());

  const auto t0 = std::chrono::steady_clock::now();
  g_compile_count.fetch_add(1);
  const nvrtcResult rc =
      nvrtcCompileProgram(guard.program, static_cast<int>(options.size()), options.data());
  r.compile_seconds = seconds_since(t0);
  r.log = program_log(guard.program);
  if (rc != NVRTC_SUCCESS) {
    std::string sources;
    for (const auto& s : m.sources) sources += (sources.empty() ? "" : ", ") + s;
    problem = {m.manifest_path.string(), "sources",
               "NVRTC could not compile package " + json_quote(m.name) + " (" + sources + ") for " +
                   opt.arch + ": " + nvrtcGetErrorString(rc) + "\n" +
                   (r.log.empty() ? std::string("(NVRTC wrote no log)") : r.log)};
    return false;
  }
  for (const auto& n : in.name_expressions) {
    const char* lowered = nullptr;
    if (nvrtcGetLoweredName(guard.program, n.c_str(), &lowered) != NVRTC_SUCCESS || !lowered) {
      problem = {m.manifest_path.string(), "launches",
                 "kernel name expression " + json_quote(n) +
                     " was not found in the compiled sources; "
                     "expected a __global__ function (or template instance) of that name"};
      return false;
    }
    r.lowered_names[n] = lowered;
  }
  std::size_t size = 0;
  KGATE_NVRTC_CALL(nvrtcGetCUBINSize(guard.program, &size), r.log);
  r.cubin.assign(size, '\0');
  KGATE_NVRTC_CALL(nvrtcGetCUBIN(guard.program, r.cubin.data()), r.log);
  return true;
}

}  // namespace

std::vector<fs::path> CompileOptions::default_system_include_dirs() {
  std::error_code ec;
  std::vector<fs::path> candidates;
  if (const char* built = KGATE_CUDA_INCLUDE_DIR; *built) candidates.emplace_back(built);
  if (const char* env = std::getenv("CUDA_PATH"); env && *env)
    candidates.push_back(fs::path(env) / "include");
  candidates.emplace_back("/usr/local/cuda/include");
  for (const auto& c : candidates)
    if (fs::exists(c / "cuda_fp16.h", ec)) return {c};
  return {};
}

fs::path default_cache_dir() {
  if (const char* env = std::getenv("KGATE_CACHE_DIR"); env && *env) return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "kgate";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "kgate";
  return fs::temp_directory_path() / "kgate-cache";
}

uint64_t nvrtc_compile_count() { return g_compile_count.load(); }

std::string nvrtc_version() {
  int major = 0, minor = 0;
  KGATE_NVRTC_CALL(nvrtcVersion(&major, &minor), std::string());
  return std::to_string(major) + "." + std::to_string(minor);
}

bool try_compile_package(const PackageManifest& m, const CompileOptions& opt, CompileResult& r,
                         ManifestProblem& problem) {
  const auto t0 = std::chrono::steady_clock::now();
  r = CompileResult{};
  static const std::regex arch_re("sm_[0-9]{2,3}[af]?");
  if (!std::regex_match(opt.arch, arch_re))
    throw Error(ErrorKind::usage, "GPU architecture " + json_quote(opt.arch) +
                                      " is not valid; expected a real architecture such as "
                                      "\"sm_90\" (a CUBIN is built, so compute_XY is refused)");
  Inputs in;
  if (!read_inputs(m, opt, in, problem)) return false;
  r.options = in.options;
  r.key = cache_key(in, opt.arch);

  fs::path cubin_path, meta_path;
  if (opt.use_cache) {
    const fs::path base = opt.cache_dir.empty() ? default_cache_dir() : opt.cache_dir;
    const fs::path dir = base / "nvrtc" / r.key.substr(0, 2);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
      throw Error(ErrorKind::usage, "cannot create the NVRTC cache directory " +
                                        json_quote(dir.string()) + ": " + ec.message() +
                                        "; set KGATE_CACHE_DIR to a writable directory");
    cubin_path = dir / (r.key + ".cubin");
    meta_path = dir / (r.key + ".json");
    if (load_entry(cubin_path, meta_path, r)) {
      r.cache_hit = true;
      r.cache_entry = cubin_path;
      r.total_seconds = seconds_since(t0);
      return true;
    }
    r.cubin.clear();
    r.lowered_names.clear();
  }

  if (!compile(m, opt, in, r, problem)) return false;

  if (opt.use_cache) {
    const json meta = {{"format", kCacheFormat},
                       {"key", r.key},
                       {"package", m.name},
                       {"version", m.version},
                       {"arch", opt.arch},
                       {"nvrtc", nvrtc_version()},
                       {"options", in.options},
                       {"lowered_names", r.lowered_names},
                       {"cubin_bytes", r.cubin.size()},
                       {"cubin_sha256", sha256_hex(r.cubin)},
                       {"compile_seconds", r.compile_seconds}};
    // A cache that cannot be written costs the next run a compile, nothing more.
    if (write_atomic(cubin_path, r.cubin) && write_atomic(meta_path, meta.dump(2) + "\n"))
      r.cache_entry = cubin_path;
  }
  r.total_seconds = seconds_since(t0);
  return true;
}

CompileResult compile_package(const PackageManifest& m, const CompileOptions& opt) {
  CompileResult r;
  ManifestProblem problem;
  if (!try_compile_package(m, opt, r, problem))
    throw Error(ErrorKind::package, format_problem(problem));
  return r;
}

}  // namespace kgate::package
