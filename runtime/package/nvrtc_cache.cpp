// The compile driver of packages: gathering what NVRTC sees from a package, compiling it in the
// sandboxed worker process (nvrtc_worker.hpp), turning NVRTC's failures into problems of the
// manifest's fields, splitting a package into its translation units, and checking each launch's
// arguments against the compiled kernels. The cache it reads and writes is nvrtc_cache_store.cpp;
// a package's precompiled kernel files are read by precompiled_kernels.cpp.
#include "runtime/package/nvrtc_cache.hpp"

#include <nvrtc.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <regex>
#include <system_error>

#include "core/cost.hpp"
#include "core/error.hpp"
#include "core/safe_text.hpp"
#include "core/suggest.hpp"
#include "runtime/cuda/check.hpp"
#include "runtime/package/nvrtc_cache_internal.hpp"
#include "runtime/package/nvrtc_standins.hpp"
#include "runtime/package/nvrtc_worker.hpp"
#include "runtime/package/package_files.hpp"

#ifndef KGATE_CUDA_INCLUDE_DIR
#define KGATE_CUDA_INCLUDE_DIR ""
#endif

namespace kgate::package {

namespace fs = std::filesystem;

namespace {

/// Name of the generated translation unit that #includes the sources of a multi-source package.
constexpr const char* kUnityName = "kgate_package_sources.cu";
// The prelude NVRTC reads before the sources (nvrtc_prelude: uint, ushort, ulong).
constexpr const char* kPreludeName = "kgate_nvrtc_prelude.h";

std::atomic<uint64_t> g_compile_count{0};

bool read_inputs(const PackageManifest& m, const CompileOptions& opt, compile_internal::Inputs& in,
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
  // As nvcc does for a quoted #include, the directory of each source is searched too, after the
  // include_dirs: a kernel file includes "its_header.cuh" from beside it as it is. (Best effort:
  // a directory past the header limits adds nothing.)
  for (const auto& source : m.sources) {
    std::string dir = fs::path(source).lexically_normal().parent_path().generic_string();
    if (dir.empty()) dir = ".";
    if (std::find(m.include_dirs.begin(), m.include_dirs.end(), dir) != m.include_dirs.end())
      continue;
    std::vector<PackageFile> more;
    std::size_t more_files = files;
    std::uintmax_t more_bytes = bytes;
    if (scan_include_dir(root, dir, more, more_files, more_bytes).empty()) {
      headers.insert(headers.end(), more.begin(), more.end());
      files = more_files;
      bytes = more_bytes;
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
  // The standard headers NVRTC cannot open, and the prelude (nvrtc_standins.hpp): kernel files
  // compile as they are.
  for (const auto& [name, text] : nvrtc_standin_headers())
    if (std::find(in.header_names.begin(), in.header_names.end(), name) == in.header_names.end()) {
      in.header_names.push_back(name);
      in.header_sources.push_back(text);
    }
  in.header_names.push_back(kPreludeName);
  in.header_sources.push_back(nvrtc_prelude());
  in.options.push_back("--gpu-architecture=" + opt.arch);
  in.options.push_back(std::string("--pre-include=") + kPreludeName);
  for (std::size_t i = 0; i < m.nvrtc_options.size(); ++i) {
    const std::string err = nvrtc_option_problem(m.nvrtc_options[i]);
    if (!err.empty()) {
      problem = {file, "nvrtc_options[" + std::to_string(i) + "]", err};
      return false;
    }
    in.options.push_back(m.nvrtc_options[i]);
  }
  for (const auto& dir : opt.system_include_dirs) in.options.push_back("-I" + dir.string());
  in.system_include_dirs = opt.system_include_dirs;
  in.name_expressions = m.name_expressions();
  return true;
}

std::string package_sources(const PackageManifest& m) {
  std::string sources;
  for (const auto& s : m.sources) sources += (sources.empty() ? "" : ", ") + s;
  return sources;
}

/// Says once per process that compiles are not confined, and why.
void warn_unsandboxed(const std::string& detail) {
  static std::atomic<bool> said{false};
  if (said.exchange(true)) return;
  std::fprintf(stderr,
               "kgate: warning: package compiles run without a sandbox here (%s): a package's "
               "source can #include any file this user can read. --require-sandbox (or "
               "KGATE_REQUIRE_SANDBOX=1) makes this an error.\n",
               detail.c_str());
}

/// Compiles in a sandboxed worker process (nvrtc_worker.hpp).
bool compile(const PackageManifest& m, const CompileOptions& opt,
             const compile_internal::Inputs& in, CompileResult& r, ManifestProblem& problem) {
  NvrtcRequest request = in;
  for (const auto& d : opt.system_include_dirs) request.readable_dirs.push_back(d.string());
  request.require_sandbox = opt.require_sandbox;
  request.sandbox = opt.sandbox;
  WorkerLimits limits;
  limits.timeout_seconds = opt.compile_timeout_seconds;
  limits.memory_limit_bytes = opt.compile_memory_bytes;

  g_compile_count.fetch_add(1);
  const WorkerRun run = run_nvrtc_worker(request, limits);
  const std::string file = m.manifest_path.string();
  const std::string what = "package " + quote_untrusted(m.name) + " (" + package_sources(m) + ")";
  if (run.timed_out) {
    problem = {file, "sources",
               "NVRTC did not finish compiling " + what + " within " +
                   std::to_string(static_cast<long>(opt.compile_timeout_seconds)) +
                   " s and was stopped (an #include of a pipe or device, or macros that expand "
                   "without end, do this); if the package is only slow to compile, raise "
                   "--compile-timeout"};
    return false;
  }
  if (run.memory_exceeded) {
    problem = {file, "sources",
               "NVRTC used more than " + std::to_string(opt.compile_memory_bytes >> 20) +
                   " MiB of memory compiling " + what +
                   " and was stopped (macros that expand without end do this)"};
    return false;
  }
  if (!run.answered) {
    const std::string how = run.signal ? "was killed by signal " + std::to_string(run.signal) +
                                             " (" + strsignal(run.signal) + ")"
                                       : "exited with code " + std::to_string(run.exit_code);
    problem = {file, "sources",
               "the compiler process for " + what + " " + how + " without an answer" +
                   (run.stderr_text.empty() ? std::string() : "\n" + run.stderr_text)};
    return false;
  }
  const NvrtcResponse& resp = run.response;
  r.sandbox = resp.sandbox;
  r.sandbox_detail = resp.sandbox_detail;
  r.compile_seconds = resp.compile_seconds;
  r.log = resp.log;
  switch (resp.status) {
    case NvrtcResponse::Status::ok:
      break;
    case NvrtcResponse::Status::no_sandbox:
      throw Error(ErrorKind::usage,
                  "no sandbox is available for compiling " + what + " (" + resp.sandbox_detail +
                      ") and --require-sandbox (or KGATE_REQUIRE_SANDBOX) asks for one; run where "
                      "user namespaces or Landlock are allowed");
    case NvrtcResponse::Status::compile_error:
      problem = {file, "sources",
                 "NVRTC could not compile " + what + " for " + opt.arch + ": " + resp.error + "\n" +
                     (r.log.empty() ? std::string("(NVRTC wrote no log)") : r.log)};
      return false;
    case NvrtcResponse::Status::missing_name:
      problem = {file, "launches",
                 "kernel name expression " + quote_untrusted(resp.error) +
                     " was not found in the compiled sources; "
                     "expected a __global__ function (or template instance) of that name"};
      return false;
    case NvrtcResponse::Status::out_of_memory:
      problem = {file, "sources",
                 "NVRTC ran out of memory compiling " + what + " (limit " +
                     std::to_string(opt.compile_memory_bytes >> 20) + " MiB)"};
      return false;
    case NvrtcResponse::Status::internal:
      throw Error(ErrorKind::device, "NVRTC failed on " + what + ": " + resp.error);
  }
  if (resp.sandbox == SandboxKind::none) warn_unsandboxed(resp.sandbox_detail);
  r.lowered_names = resp.lowered_names;
  r.cubin = resp.cubin;
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
  for (const auto& c : candidates) {
    if (!fs::exists(c / "cuda_fp16.h", ec)) continue;
    std::vector<fs::path> dirs{c};
    if (fs::is_directory(c / "cccl", ec)) dirs.push_back(c / "cccl");
    return dirs;
  }
  return {};
}

double CompileOptions::compile_timeout_from_environment() {
  if (const char* env = std::getenv("KGATE_COMPILE_TIMEOUT"); env && *env) {
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    if (end && *end == '\0' && v > 0 && v < 1e7) return v;
  }
  return 300;
}

bool CompileOptions::require_sandbox_from_environment() {
  const char* env = std::getenv("KGATE_REQUIRE_SANDBOX");
  return env && *env && std::string(env) != "0";
}

uint64_t nvrtc_compile_count() { return g_compile_count.load(); }

std::string nvrtc_version() {
  int major = 0, minor = 0;
  KGATE_NVRTC_CALL(nvrtcVersion(&major, &minor), std::string());
  return std::to_string(major) + "." + std::to_string(minor);
}

namespace {

/// The __global__ functions a package's sources and headers define (their names, unqualified).
std::vector<std::string> global_function_names(const compile_internal::Inputs& in) {
  std::vector<std::string> names;
  auto scan = [&](const std::string& text) {
    for (std::size_t at = text.find("__global__"); at != std::string::npos;
         at = text.find("__global__", at + 10)) {
      // The identifier before the first '(' that is not an attribute's (__launch_bounds__(256)).
      for (std::size_t from = at + 10, tries = 0; tries < 4; ++tries) {
        const std::size_t paren = text.find('(', from);
        if (paren == std::string::npos || paren - at > 400) break;
        std::size_t e = paren;
        while (e > at && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
        std::size_t b = e;
        while (b > at &&
               (std::isalnum(static_cast<unsigned char>(text[b - 1])) || text[b - 1] == '_'))
          --b;
        const std::string id = text.substr(b, e - b);
        if (id.rfind("__", 0) == 0) {  // an attribute: skip its arguments
          const std::size_t close = text.find(')', paren);
          if (close == std::string::npos) break;
          from = close + 1;
          continue;
        }
        if (!id.empty()) names.push_back(id);
        break;
      }
    }
  };
  scan(in.main_source);
  // The package's headers, not kgate's stand-ins and prelude.
  const auto kgate_text = [](const std::string& text) {
    if (text == nvrtc_prelude()) return true;
    for (const auto& [name, standin] : nvrtc_standin_headers())
      if (text == standin) return true;
    return false;
  };
  for (const auto& h : in.header_sources)
    if (!kgate_text(h)) scan(h);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

/// "kgate_device::softmax_rows<float, 4>" -> "softmax_rows".
std::string base_name(const std::string& expr) {
  std::string s = expr.substr(0, expr.find('<'));
  if (const auto colon = s.rfind("::"); colon != std::string::npos) s = s.substr(colon + 2);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  while (!s.empty() && (std::isspace(static_cast<unsigned char>(s.front())) || s.front() == '&'))
    s.erase(s.begin());
  return s;
}

/// The launch fields (launches[i].kernel) whose kernel name expression, for some dtype, is `expr`.
std::string launch_fields_of(const PackageManifest& m, const std::string& expr) {
  std::string fields;
  for (std::size_t i = 0; i < m.launches.size(); ++i) {
    const Launch& l = m.launches[i];
    bool uses = l.kernel == expr;
    for (const auto& [d, name] : l.kernel_for_dtype) uses = uses || name == expr;
    if (!uses) continue;
    const std::string f =
        (l.field.empty() ? "launches[" + std::to_string(i) + "]" : l.field) + ".kernel";
    if (fields.find(f) == std::string::npos) fields += (fields.empty() ? "" : ", ") + f;
  }
  return fields;
}

/// A compile that failed on a kernel name expression (NVRTC reports it in its generated
/// __nv_name_map, with its internals) becomes a problem of the launch that names it, with a
/// did-you-mean over the sources' __global__ functions.
void name_problem(const PackageManifest& m, const compile_internal::Inputs& in,
                  ManifestProblem& problem) {
  const std::string& log = problem.message;
  const auto map = log.find("__nv_name_map(");
  if (map == std::string::npos) return;
  const std::string pragma = "#pragma nv_mangled_name ";
  const auto at = log.find(pragma, map);
  if (at == std::string::npos) return;
  const auto end = log.find('\n', at);
  std::string expr = log.substr(
      at + pragma.size(), end == std::string::npos ? std::string::npos : end - at - pragma.size());
  while (!expr.empty() && std::isspace(static_cast<unsigned char>(expr.back()))) expr.pop_back();
  const std::string fields = launch_fields_of(m, expr);
  if (fields.empty()) return;
  const auto error_at = log.find("error: ", map);
  const std::string nvrtc = error_at == std::string::npos
                                ? std::string()
                                : log.substr(error_at + 7, log.find('\n', error_at) - error_at - 7);
  const auto globals = global_function_names(in);
  const std::string base = base_name(expr);
  const std::string guess = closest(base, globals);
  std::string listed;
  for (std::size_t i = 0; i < globals.size() && i < 24; ++i) listed += (i ? ", " : "") + globals[i];
  std::string message = "kernel " + quote_untrusted(expr) +
                        " does not name a kernel of the sources (NVRTC: " + nvrtc + ")";
  if (!guess.empty() && guess != base) {
    std::string fixed = expr;
    fixed.replace(fixed.find(base), base.size(), guess);
    message += "; did you mean " + quote_untrusted(fixed) + "?";
  }
  message += globals.empty() ? " The sources define no __global__ function."
                             : " Their __global__ functions: " + listed + ".";
  problem.field = fields;
  problem.message = message;
}

/// Every name expression must lower to a kernel: a __device__ variable lowers too, but cannot be
/// launched. False (and a problem on the launch) when one names a symbol that is not a function.
bool names_are_kernels(const PackageManifest& m, const CompileResult& r, ManifestProblem& problem) {
  const auto functions = elf_function_names(r.cubin);
  if (!functions) return true;  // not ELF: cannot tell
  for (const auto& [expr, lowered] : r.lowered_names) {
    if (std::binary_search(functions->begin(), functions->end(), lowered)) continue;
    problem = {m.manifest_path.string(), launch_fields_of(m, expr),
               "kernel " + quote_untrusted(expr) +
                   " is not a function in the compiled code (a __device__ variable, or a "
                   "__device__ function?); name a __global__ function"};
    if (problem.field.empty()) problem.field = "launches";
    return false;
  }
  return true;
}

/// Compiles one translation unit (the manifest's sources, options and name expressions).
bool try_compile_unit(const PackageManifest& m, const CompileOptions& opt, CompileResult& r,
                      ManifestProblem& problem) {
  const auto t0 = std::chrono::steady_clock::now();
  r = CompileResult{};
  static const std::regex arch_re("sm_[0-9]{2,3}[af]?");
  if (!std::regex_match(opt.arch, arch_re))
    throw Error(ErrorKind::usage, "GPU architecture " + quote_untrusted(opt.arch) +
                                      " is not valid; expected a real architecture such as "
                                      "\"sm_90\" (a CUBIN is built, so compute_XY is refused)");
  compile_internal::Inputs in;
  if (!read_inputs(m, opt, in, problem)) return false;
  r.options = in.options;
  r.key = compile_internal::cache_key(in, opt.arch);

  const compile_internal::CacheSlot slot = compile_internal::open_cache_slot(opt, r.key);
  if (compile_internal::load_cache_entry(slot, r.key, r)) {
    r.cache_hit = true;
    r.cache_entry = slot.cubin_path;
    r.total_seconds = compile_internal::seconds_since(t0);
    return true;
  }
  r.cubin.clear();
  r.lowered_names.clear();

  if (!compile(m, opt, in, r, problem)) {
    name_problem(m, in, problem);
    return false;
  }
  if (!names_are_kernels(m, r, problem)) return false;
  compile_internal::store_cache_entry(slot, m, opt, in, r);
  r.total_seconds = compile_internal::seconds_since(t0);
  return true;
}
}  // namespace

const CompileResult& compile_unit_for(const CompileResult& r, DType dtype, std::size_t launch) {
  const auto u = r.unit_of.find({dtype, launch});
  return u != r.unit_of.end() && u->second < r.units.size() ? r.units[u->second] : r;
}

namespace {

/// Reads the parameter tables of a compile result's kernels (from the CUBIN, or the PTX).
void read_params(CompileResult& r) {
  r.params.clear();
  if (r.precompiled == "ptx") {
    for (const auto& [expr, lowered] : r.lowered_names)
      if (auto p = ptx_kernel_params(r.cubin, lowered); !p.empty())
        r.params[lowered] = std::move(p);
    return;
  }
  // A fatbin: the parameter tables of its CUBIN for the architecture compiled for.
  std::optional<std::string> fatbin_elf;
  if (r.precompiled == "fatbin" && !r.options.empty()) {
    const std::string arch = r.options.front().substr(r.options.front().find("sm_") + 3);
    fatbin_elf =
        fatbin_cubin(r.cubin, static_cast<uint32_t>(std::strtoul(arch.c_str(), nullptr, 10)));
    if (!fatbin_elf) return;
  }
  if (auto all = cubin_kernel_params(fatbin_elf ? *fatbin_elf : r.cubin))
    for (const auto& [expr, lowered] : r.lowered_names)
      if (auto it = all->find(lowered); it != all->end()) r.params[lowered] = it->second;
}

/// Each launch's "args" against its kernel's parameters as compiled (count, then size by size), for
/// every dtype; false with the first mismatch as a problem of the launch.
bool args_match_params(const PackageManifest& m, const CompileResult& r, ManifestProblem& problem) {
  for (std::size_t i = 0; i < m.launches.size(); ++i) {
    const Launch& l = m.launches[i];
    const std::string field =
        (l.field.empty() ? "launches[" + std::to_string(i) + "]" : l.field) + ".args";
    for (DType d : m.guard.dtypes) {
      const std::string expr = l.kernel_name(d);
      // The unit's own lowered name: a plain kernel typed by a macro is mangled differently per
      // unit.
      const CompileResult& unit = compile_unit_for(r, d, i);
      const auto low = unit.lowered_names.find(expr);
      if (expr.empty() || low == unit.lowered_names.end()) continue;
      const auto p = unit.params.find(low->second);
      if (p == unit.params.end() || p->second.empty()) continue;  // the file could not tell
      const auto& params = p->second;
      std::string sizes;
      for (const auto& q : params) sizes += (sizes.empty() ? "" : ", ") + std::to_string(q.size);
      const std::string kernel = "kernel " + quote_untrusted(expr) + " (" + dtype_name(d) +
                                 ") takes " + std::to_string(params.size()) + " parameter(s) of " +
                                 sizes + " bytes";
      if (params.size() != l.args.size()) {
        problem = {m.manifest_path.string(), field,
                   kernel + ", but \"args\" lists " + std::to_string(l.args.size()) +
                       "; make \"args\" match the kernel's signature"};
        return false;
      }
      for (std::size_t j = 0; j < params.size(); ++j) {
        const KernelArg& a = l.args[j];
        const bool pointer =
            a.kind == KernelArg::Kind::tensor || a.kind == KernelArg::Kind::workspace;
        const std::size_t bytes = pointer ? 8 : scalar_type_size(a.type);
        if (bytes == params[j].size) continue;
        problem = {
            m.manifest_path.string(), field + "[" + std::to_string(j) + "]",
            "is " + std::to_string(bytes) + " bytes" +
                (pointer ? " (a pointer)" : std::string(" (") + scalar_type_name(a.type) + ")") +
                ", but parameter " + std::to_string(j) + " of " +
                kernel.substr(0, kernel.find(" takes")) + " is " + std::to_string(params[j].size) +
                " bytes; fix its \"type\" or the kernel's signature"};
        return false;
      }
    }
  }
  return true;
}

/// Compiles (or loads) the package, then checks every launch's arguments against the compiled code.
bool compile_and_check(const PackageManifest& m, const CompileOptions& opt, CompileResult& r,
                       ManifestProblem& problem);

}  // namespace

bool try_compile_package(const PackageManifest& m, const CompileOptions& opt, CompileResult& r,
                         ManifestProblem& problem) {
  const cost::Scope compiling("compile");
  if (!compile_and_check(m, opt, r, problem)) return false;
  if (r.units.empty()) {
    read_params(r);
  } else {
    for (auto& u : r.units) read_params(u);
  }
  return args_match_params(m, r, problem);
}

namespace {

bool compile_and_check(const PackageManifest& m, const CompileOptions& opt, CompileResult& r,
                       ManifestProblem& problem) {
  static const std::regex arch_re("sm_[0-9]{2,3}[af]?");
  if (!std::regex_match(opt.arch, arch_re))
    throw Error(ErrorKind::usage, "GPU architecture " + quote_untrusted(opt.arch) +
                                      " is not valid; expected a real architecture such as "
                                      "\"sm_90\" (a CUBIN is built, so compute_XY is refused)");
  r = CompileResult{};
  bool ok = false;
  if (compile_internal::load_precompiled(m, opt, r, problem, ok)) return ok;
  const auto units = compile_units(m);

  if (units.size() == 1 && units.front().options.empty())
    return try_compile_unit(m, opt, r, problem);
  r = CompileResult{};
  for (std::size_t u = 0; u < units.size(); ++u) {
    // The unit as a package of its own: its options added, its kernels only.
    PackageManifest unit = m;
    unit.nvrtc_options.insert(unit.nvrtc_options.end(), units[u].options.begin(),
                              units[u].options.end());
    unit.nvrtc_options_for_dtype.clear();
    unit.launches.clear();
    for (const auto& name : units[u].name_expressions) {
      Launch l;
      l.kernel = name;
      // Messages name the manifest's own launches that use it.
      for (const auto& [d, i] : units[u].launches) {
        const Launch& orig = m.launches[i];
        if (orig.kernel_name(d) != name) continue;
        const std::string f =
            orig.field.empty() ? "launches[" + std::to_string(i) + "]" : orig.field;
        if (l.field.find(f) == std::string::npos)
          l.field += (l.field.empty() ? "" : ".kernel, ") + f;
      }
      unit.launches.push_back(std::move(l));
    }
    CompileResult part;
    if (!try_compile_unit(unit, opt, part, problem)) {
      std::string opts;
      for (const auto& o : units[u].options) opts += (opts.empty() ? "" : " ") + o;
      problem.message = "(compiled with " +
                        (opts.empty() ? std::string("no added options") : opts) + ") " +
                        problem.message;
      return false;
    }
    if (u == 0) {
      r.cubin = part.cubin;
      r.key = part.key;
      r.cache_entry = part.cache_entry;
      r.cache_hit = true;
      r.sandbox = part.sandbox;
      r.sandbox_detail = part.sandbox_detail;
    }
    r.cache_hit = r.cache_hit && part.cache_hit;
    if (!part.cache_hit) {
      r.sandbox = part.sandbox;
      r.sandbox_detail = part.sandbox_detail;
    }
    r.compile_seconds += part.compile_seconds;
    r.total_seconds += part.total_seconds;
    if (!part.log.empty()) r.log += part.log;
    if (r.options.empty()) r.options = part.options;
    // Merged for messages and single-unit callers; launches resolve each unit's own (PackageState).
    for (const auto& [name, lowered] : part.lowered_names) r.lowered_names.emplace(name, lowered);
    for (const auto& dl : units[u].launches) r.unit_of[dl] = u;
    r.units.push_back(std::move(part));
  }
  return true;
}

}  // namespace

CompileResult compile_package(const PackageManifest& m, const CompileOptions& opt) {
  CompileResult r;
  ManifestProblem problem;
  if (!try_compile_package(m, opt, r, problem))
    throw Error(ErrorKind::package, format_problem(problem));
  return r;
}

}  // namespace kgate::package
