// NVRTC compilation of packages and the content-addressed CUBIN cache.
//
// Cache layout: <cache_dir>/nvrtc/<key[0:2]>/<key>.cubin and <key>.json (lowered names, the CUBIN's
// SHA-256, an HMAC of both under a key kept outside the cache, provenance). Entries are written to
// a fresh temporary file and renamed, the .json last, so a reader sees a complete entry or none. An
// entry whose CUBIN does not match its digest, whose MAC does not verify, or that is a link, not a
// regular file or another user's, is a miss: it is recompiled and replaced. So the cache cannot
// change what runs: only a compile of the package's own sources can put a CUBIN there.
//
// Compiles run in the sandboxed worker process (nvrtc_worker.hpp).
#include "runtime/package/nvrtc_cache.hpp"

#include <fcntl.h>
#include <nvrtc.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <regex>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/safe_text.hpp"
#include "core/sha256.hpp"
#include "core/suggest.hpp"
#include "runtime/cuda/check.hpp"
#include "runtime/package/nvrtc_standins.hpp"
#include "runtime/package/nvrtc_worker.hpp"
#include "runtime/package/package_files.hpp"

#ifndef KGATE_CUDA_INCLUDE_DIR
#define KGATE_CUDA_INCLUDE_DIR ""
#endif

namespace kgate::package {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// /2: entries carry an HMAC under a key kept outside the cache, and the key covers the toolkit's
// headers (the only files outside the package a compile can read).
constexpr const char* kCacheFormat = "kgate-nvrtc-cache/2";
/// Cache files larger than this are not read.
constexpr std::uintmax_t kMaxCacheFileBytes = 512ULL << 20;
/// Name of the generated translation unit that #includes the sources of a multi-source package.
constexpr const char* kUnityName = "kgate_package_sources.cu";
// The prelude NVRTC reads before the sources (nvrtc_prelude: uint, ushort, ulong).
constexpr const char* kPreludeName = "kgate_nvrtc_prelude.h";

std::atomic<uint64_t> g_compile_count{0};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Everything NVRTC sees, gathered from the package before hashing and compiling.
struct Inputs : NvrtcRequest {
  std::vector<fs::path> system_include_dirs;
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

/// Names, sizes and modification times of every file below the toolkit include directories: the
/// only files outside the package that a compile can read (the sandbox hides the rest), so that a
/// changed toolkit header changes the key. Computed once per process and set of directories.
std::mutex g_fingerprint_mutex;
std::map<std::vector<fs::path>, std::string> g_fingerprints;

std::string toolkit_fingerprint(const std::vector<fs::path>& dirs) {
  std::lock_guard<std::mutex> lock(g_fingerprint_mutex);
  auto& memo = g_fingerprints;
  if (auto it = memo.find(dirs); it != memo.end()) return it->second;
  Sha256 h;
  for (const auto& d : dirs) {
    h.field(d.string());
    std::vector<std::string> rows;
    std::error_code ec;
    for (fs::recursive_directory_iterator
             it(d, fs::directory_options::follow_directory_symlink, ec),
         end;
         !ec && it != end; it.increment(ec)) {
      struct stat st {};
      if (::stat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      rows.push_back(it->path().lexically_relative(d).generic_string() + "\n" +
                     std::to_string(st.st_size) + "\n" + std::to_string(st.st_mtim.tv_sec) + "." +
                     std::to_string(st.st_mtim.tv_nsec));
      if (rows.size() > 200000) break;  // a runaway tree: the fingerprint stays what it has seen
    }
    std::sort(rows.begin(), rows.end());
    h.field(std::to_string(rows.size()));
    for (const auto& r : rows) h.field(r);
  }
  return memo[dirs] = h.hex();
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
  h.field(toolkit_fingerprint(in.system_include_dirs));
  return h.hex();
}

/// Reads a cache file: a regular file owned by this user, not reached through a symbolic link.
bool read_cache_file(const fs::path& p, std::string& out) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
            static_cast<std::uintmax_t>(st.st_size) <= kMaxCacheFileBytes;
  if (ok) {
    out.resize(static_cast<std::size_t>(st.st_size));
    std::size_t done = 0;
    while (ok && done < out.size()) {
      const ssize_t r = ::read(fd, out.data() + done, out.size() - done);
      if (r > 0) done += static_cast<std::size_t>(r);
      else if (r == 0 || errno != EINTR) ok = false;
    }
  }
  ::close(fd);
  return ok;
}

/// Writes `bytes` to `p` through a fresh temporary file (O_EXCL, never through a planted link) and
/// a rename; false on any failure.
bool write_atomic(const fs::path& p, const std::string& bytes) {
  static std::atomic<uint64_t> serial{0};
  std::random_device rd;
  const fs::path tmp = p.string() + ".tmp." + std::to_string(::getpid()) + "." +
                       std::to_string(serial.fetch_add(1)) + "." + std::to_string(rd());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  std::size_t done = 0;
  bool ok = true;
  while (ok && done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w > 0) done += static_cast<std::size_t>(w);
    else if (errno != EINTR) ok = false;
  }
  ok = (::close(fd) == 0) && ok;
  std::error_code ec;
  if (ok) fs::rename(tmp, p, ec);
  if (!ok || ec) fs::remove(tmp, ec);
  return ok && !ec;
}

/// What an entry's MAC covers: its key, the CUBIN's digest and the lowered names.
std::string entry_mac(const std::string& mac_key, const std::string& key,
                      const std::string& cubin_sha256,
                      const std::map<std::string, std::string>& lowered) {
  Sha256 h;
  h.field(kCacheFormat).field(key).field(cubin_sha256).field(std::to_string(lowered.size()));
  for (const auto& [n, l] : lowered) h.field(n).field(l);
  return hmac_sha256_hex(mac_key, h.digest());
}

/// Reads a cache entry; false when it is missing, incomplete, corrupt, foreign or forged (its MAC
/// does not verify under this user's key): then it is recompiled and replaced.
bool load_entry(const fs::path& cubin_path, const fs::path& meta_path, const std::string& key,
                const std::string& mac_key, CompileResult& r) {
  std::string meta_text;
  if (!read_cache_file(meta_path, meta_text) || !read_cache_file(cubin_path, r.cubin)) return false;
  try {
    const json meta = json::parse(meta_text);
    if (meta.at("format").get<std::string>() != kCacheFormat) return false;
    if (meta.at("key").get<std::string>() != key) return false;
    const std::string digest = sha256_hex(r.cubin);
    if (meta.at("cubin_sha256").get<std::string>() != digest) return false;
    r.lowered_names = meta.at("lowered_names").get<std::map<std::string, std::string>>();
    if (meta.at("mac").get<std::string>() != entry_mac(mac_key, key, digest, r.lowered_names))
      return false;
  } catch (const json::exception&) {
    return false;
  }
  return true;
}

/// A cache directory must belong to this user and not be writable by everyone: anyone who can
/// write it could otherwise plant entries (the MAC stops forged ones, a private directory also
/// stops deleting and racing). Throws Error(usage) naming the directory and the fix.
void check_cache_dir(const fs::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    throw Error(ErrorKind::usage, "cannot use the NVRTC cache directory " +
                                      quote_untrusted(dir.string()) + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode))
    throw Error(ErrorKind::usage, "the NVRTC cache path " + quote_untrusted(dir.string()) +
                                      " is not a directory; set KGATE_CACHE_DIR to a directory");
  if (st.st_uid != ::geteuid())
    throw Error(ErrorKind::usage,
                "the NVRTC cache directory " + quote_untrusted(dir.string()) + " belongs to user " +
                    std::to_string(st.st_uid) + ", not to this user (" +
                    std::to_string(::geteuid()) +
                    "); another user could plant compiled code there. Set KGATE_CACHE_DIR to a "
                    "directory of your own");
  if (st.st_mode & S_IWOTH)
    throw Error(ErrorKind::usage,
                "the NVRTC cache directory " + quote_untrusted(dir.string()) +
                    " is writable by every user; anyone could plant compiled code there. Run "
                    "chmod o-w on it, or set KGATE_CACHE_DIR to a private directory");
}

/// Creates `dir` (0700) and its missing parents, then checks it.
void make_cache_dir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (!ec) fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
    if (ec)
      throw Error(ErrorKind::usage, "cannot create the NVRTC cache directory " +
                                        quote_untrusted(dir.string()) + ": " + ec.message() +
                                        "; set KGATE_CACHE_DIR to a writable directory");
  }
  check_cache_dir(dir);
}

std::string package_sources(const PackageManifest& m) {
  std::string sources;
  for (const auto& s : m.sources) sources += (sources.empty() ? "" : ", ") + s;
  return sources;
}

/// Says once per process that the cache is off for want of a place to keep its key.
void warn_no_cache_key() {
  static std::atomic<bool> said{false};
  if (said.exchange(true)) return;
  std::fprintf(stderr,
               "kgate: warning: the NVRTC cache is off: there is no place for its key (set HOME, "
               "KGATE_CACHE_KEY_FILE or KGATE_CACHE_KEY); every package is compiled\n");
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
bool compile(const PackageManifest& m, const CompileOptions& opt, const Inputs& in,
             CompileResult& r, ManifestProblem& problem) {
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

fs::path default_cache_dir() {
  if (const char* env = std::getenv("KGATE_CACHE_DIR"); env && *env) return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "kgate";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "kgate";
  // Never a directory shared by the machine's users: one of this user's own.
  return fs::temp_directory_path() / ("kgate-cache-" + std::to_string(::geteuid()));
}

fs::path default_cache_key_file() {
  if (const char* env = std::getenv("KGATE_CACHE_KEY_FILE"); env && *env) return env;
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg)
    return fs::path(xdg) / "kgate" / "cache.key";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".config" / "kgate" / "cache.key";
  return {};
}

std::optional<std::string> cache_mac_key(const fs::path& cache_dir, const fs::path& key_file_opt) {
  if (const char* env = std::getenv("KGATE_CACHE_KEY"); env && *env) {
    if (std::strlen(env) < 16)
      throw Error(ErrorKind::usage,
                  "KGATE_CACHE_KEY is shorter than 16 characters; give the NVRTC cache a long "
                  "random secret (e.g. 64 hex digits from a CI secret)");
    return std::string(env);
  }
  const fs::path key_file = key_file_opt.empty() ? default_cache_key_file() : key_file_opt;
  if (key_file.empty()) return std::nullopt;
  std::error_code ec;
  const fs::path cache_canon = fs::weakly_canonical(cache_dir, ec);
  const fs::path key_canon = fs::weakly_canonical(key_file, ec);
  if (!ec && is_inside(cache_canon, key_canon))
    throw Error(ErrorKind::usage, "the NVRTC cache key file " + quote_untrusted(key_file.string()) +
                                      " lies inside the cache directory " +
                                      quote_untrusted(cache_dir.string()) +
                                      "; a restored cache would bring its own key. Keep it outside "
                                      "(KGATE_CACHE_KEY_FILE) or pass the key as KGATE_CACHE_KEY");
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int fd = ::open(key_file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      struct stat st {};
      char buf[256];
      const bool stat_ok = ::fstat(fd, &st) == 0;
      const ssize_t n = stat_ok ? ::read(fd, buf, sizeof buf) : -1;
      ::close(fd);
      if (!stat_ok || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077))
        throw Error(ErrorKind::usage,
                    "the NVRTC cache key file " + quote_untrusted(key_file.string()) +
                        " must be a regular file of this user with mode 0600 (no access for "
                        "others); fix it with chmod 600, or delete it to have a new one made");
      if (n < 16)
        throw Error(ErrorKind::usage,
                    "the NVRTC cache key file " + quote_untrusted(key_file.string()) +
                        " holds fewer than 16 bytes; delete it to have a new one made");
      return std::string(buf, static_cast<std::size_t>(n));
    }
    if (errno != ENOENT)
      throw Error(ErrorKind::usage, "cannot read the NVRTC cache key file " +
                                        quote_untrusted(key_file.string()) + ": " +
                                        std::strerror(errno));
    // First use: 32 random bytes, in hex, readable by this user only.
    fs::create_directories(key_file.parent_path(), ec);
    unsigned char raw[32];
    std::random_device rd;
    for (auto& b : raw) b = static_cast<unsigned char>(rd());
    const std::string key =
        to_hex(std::string_view(reinterpret_cast<const char*>(raw), sizeof raw));
    const int out =
        ::open(key_file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0) {
      if (errno == EEXIST) continue;  // made by a concurrent run: read it
      return std::nullopt;            // nowhere to keep a key: no cache
    }
    const bool ok = ::write(out, key.data(), key.size()) == static_cast<ssize_t>(key.size());
    ::close(out);
    if (ok) return key;
    return std::nullopt;
  }
  return std::nullopt;
}

void forget_toolkit_fingerprints() {
  std::lock_guard<std::mutex> lock(g_fingerprint_mutex);
  g_fingerprints.clear();
}

uint64_t nvrtc_compile_count() { return g_compile_count.load(); }

std::string nvrtc_version() {
  int major = 0, minor = 0;
  KGATE_NVRTC_CALL(nvrtcVersion(&major, &minor), std::string());
  return std::to_string(major) + "." + std::to_string(minor);
}

namespace {

/// The __global__ functions a package's sources and headers define (their names, unqualified).
std::vector<std::string> global_function_names(const Inputs& in) {
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
void name_problem(const PackageManifest& m, const Inputs& in, ManifestProblem& problem) {
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
  Inputs in;
  if (!read_inputs(m, opt, in, problem)) return false;
  r.options = in.options;
  r.key = cache_key(in, opt.arch);

  fs::path cubin_path, meta_path;
  std::optional<std::string> mac_key;
  const fs::path base = opt.cache_dir.empty() ? default_cache_dir() : opt.cache_dir;
  if (opt.use_cache) mac_key = cache_mac_key(base, opt.cache_key_file);
  if (opt.use_cache && !mac_key) warn_no_cache_key();
  if (mac_key) {
    make_cache_dir(base);
    make_cache_dir(base / "nvrtc");
    const fs::path dir = base / "nvrtc" / r.key.substr(0, 2);
    make_cache_dir(dir);
    cubin_path = dir / (r.key + ".cubin");
    meta_path = dir / (r.key + ".json");
    if (load_entry(cubin_path, meta_path, r.key, *mac_key, r)) {
      r.cache_hit = true;
      r.cache_entry = cubin_path;
      r.total_seconds = seconds_since(t0);
      return true;
    }
    r.cubin.clear();
    r.lowered_names.clear();
  }

  if (!compile(m, opt, in, r, problem)) {
    name_problem(m, in, problem);
    return false;
  }
  if (!names_are_kernels(m, r, problem)) return false;

  if (mac_key) {
    const std::string digest = sha256_hex(r.cubin);
    const json meta = {{"format", kCacheFormat},
                       {"key", r.key},
                       {"package", m.name},
                       {"version", m.version},
                       {"arch", opt.arch},
                       {"nvrtc", nvrtc_version()},
                       {"options", in.options},
                       {"lowered_names", r.lowered_names},
                       {"cubin_bytes", r.cubin.size()},
                       {"cubin_sha256", digest},
                       {"mac", entry_mac(*mac_key, r.key, digest, r.lowered_names)},
                       {"compile_seconds", r.compile_seconds}};
    // A cache that cannot be written costs the next run a compile, nothing more.
    if (write_atomic(cubin_path, r.cubin) && write_atomic(meta_path, meta.dump(2) + "\n"))
      r.cache_entry = cubin_path;
  }
  r.total_seconds = seconds_since(t0);
  return true;
}

uint64_t read_le(const std::string& img, std::size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(img[at + static_cast<std::size_t>(i)]);
  return v;
}

/// Loads the precompiled kernel file chosen for `opt.arch`: true when one was loaded (or a problem
/// found; `ok` says which), false when the package has none for it and its sources are compiled.
bool load_precompiled(const PackageManifest& m, const CompileOptions& opt, CompileResult& r,
                      ManifestProblem& problem, bool& ok) {
  const std::string file = m.manifest_path.string();
  std::string kind, field, rel;
  if (auto it = m.cubins.find(opt.arch); it != m.cubins.end()) {
    kind = "cubin", field = "cubin." + opt.arch, rel = it->second;
  } else if (!m.fatbin.empty()) {
    kind = "fatbin", field = "fatbin", rel = m.fatbin;
  } else if (!m.ptx.empty()) {
    kind = "ptx", field = "ptx", rel = m.ptx;
  } else if (!m.cubins.empty() && m.sources.empty()) {
    std::string archs;
    for (const auto& [a, path] : m.cubins) archs += (archs.empty() ? "" : ", ") + a;
    problem = {file, "cubin",
               "the package ships CUBINs for " + archs +
                   " only, and no fatbin, PTX or sources; this GPU is " + opt.arch +
                   " (a CUBIN runs only on its own architecture): add \"" + opt.arch +
                   "\" to \"cubin\", a \"ptx\" file (the driver compiles it for any newer GPU), or "
                   "\"sources\""};
    ok = false;
    return true;
  } else {
    return false;  // compile the sources
  }
  const auto t0 = std::chrono::steady_clock::now();
  fs::path path;
  if (const std::string err = package_path_problem(m.dir, rel, PathKind::binary, &path);
      !err.empty()) {
    problem = {file, field, err};
    ok = false;
    return true;
  }
  std::string image = read_package_file(path);
  std::vector<std::string> names;
  bool names_known = true;
  if (kind == "cubin") {
    const auto found = elf_function_names(image);
    if (!found) {
      problem = {file, field,
                 quote_untrusted(rel) +
                     " is not a CUBIN (an ELF64 image, as nvcc -cubin or cuobjdump -xelf "
                     "writes); a fatbin goes under \"fatbin\", PTX under \"ptx\""};
      ok = false;
      return true;
    }
    names = *found;
  } else if (kind == "ptx") {
    names = ptx_entry_names(image);
    if (names.empty()) {
      problem = {
          file, field,
          quote_untrusted(rel) + " holds no .entry: expected PTX text with the package's kernels"};
      ok = false;
      return true;
    }
    image.push_back('\0');  // cuModuleLoadData reads PTX as a C string
  } else {
    names_known =
        false;  // a fatbin's images may be compressed: the names are checked when it is loaded
  }
  for (const auto& expr : m.name_expressions()) {
    if (names_known && std::find(names.begin(), names.end(), expr) == names.end()) {
      std::string listed;
      for (std::size_t i = 0; i < names.size() && i < 24; ++i) listed += (i ? ", " : "") + names[i];
      const std::string guess = closest(expr, names);
      problem = {file, field,
                 "kernel " + quote_untrusted(expr) + " is not in " + quote_untrusted(rel) +
                     (guess.empty() ? "" : "; did you mean " + quote_untrusted(guess) + "?") +
                     " It holds: " + listed +
                     ". With a precompiled file, kernel names are its symbols (extern \"C\" "
                     "names, or mangled ones)"};
      ok = false;
      return true;
    }
    r.lowered_names[expr] = expr;
  }
  r.cubin = std::move(image);
  r.precompiled = kind;
  r.precompiled_path = rel;
  r.key = sha256_hex(kind + "\n" + opt.arch + "\n" + r.cubin);
  r.options = {"--gpu-architecture=" + opt.arch};
  r.total_seconds = seconds_since(t0);
  ok = true;
  return true;
}

}  // namespace

std::optional<std::vector<std::string>> elf_function_names(const std::string& img) {
  if (img.size() < 64 ||
      img.compare(0, 4,
                  "\x7f"
                  "ELF") != 0 ||
      img[4] != 2 || img[5] != 1)
    return std::nullopt;
  const uint64_t shoff = read_le(img, 0x28, 8), shentsize = read_le(img, 0x3A, 2),
                 shnum = read_le(img, 0x3C, 2);
  if (shentsize < 64 || shoff > img.size() || shnum > (img.size() - shoff) / shentsize)
    return std::nullopt;
  const auto section = [&](uint64_t i, uint64_t field, int bytes) {
    return read_le(img, shoff + i * shentsize + field, bytes);
  };
  std::vector<std::string> names;
  for (uint64_t i = 0; i < shnum; ++i) {
    if (section(i, 0x04, 4) != 2) continue;  // SHT_SYMTAB
    const uint64_t off = section(i, 0x18, 8), size = section(i, 0x20, 8),
                   link = section(i, 0x28, 4);
    const uint64_t entsize = section(i, 0x38, 8);
    if (link >= shnum || entsize < 24 || off > img.size() || size > img.size() - off)
      return std::nullopt;
    const uint64_t str_off = section(link, 0x18, 8), str_size = section(link, 0x20, 8);
    if (str_off > img.size() || str_size > img.size() - str_off) return std::nullopt;
    for (uint64_t at = off; at + entsize <= off + size; at += entsize) {
      if ((static_cast<unsigned char>(img[at + 4]) & 0xf) != 2) continue;  // STT_FUNC
      const uint64_t name = read_le(img, at, 4);
      if (name >= str_size) continue;
      const std::size_t start = str_off + name;
      const std::size_t end = img.find('\0', start);
      if (end == std::string::npos || end > str_off + str_size) continue;
      names.push_back(img.substr(start, end - start));
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::optional<std::map<std::string, std::vector<KernelParam>>> cubin_kernel_params(
    const std::string& img) {
  if (img.size() < 64 ||
      img.compare(0, 4,
                  "\x7f"
                  "ELF") != 0 ||
      img[4] != 2 || img[5] != 1)
    return std::nullopt;
  const uint64_t shoff = read_le(img, 0x28, 8), shentsize = read_le(img, 0x3A, 2),
                 shnum = read_le(img, 0x3C, 2);
  const uint64_t shstrndx = read_le(img, 0x3E, 2);
  if (shentsize < 64 || shoff > img.size() || shnum > (img.size() - shoff) / shentsize ||
      shstrndx >= shnum)
    return std::nullopt;
  const auto section = [&](uint64_t i, uint64_t field, int bytes) {
    return read_le(img, shoff + i * shentsize + field, bytes);
  };
  const uint64_t names_off = section(shstrndx, 0x18, 8), names_size = section(shstrndx, 0x20, 8);
  if (names_off > img.size() || names_size > img.size() - names_off) return std::nullopt;
  std::map<std::string, std::vector<KernelParam>> out;
  const std::string prefix = ".nv.info.";
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint64_t name = section(i, 0x00, 4);
    if (name >= names_size) continue;
    const std::size_t end = img.find('\0', names_off + name);
    if (end == std::string::npos) continue;
    const std::string section_name = img.substr(names_off + name, end - names_off - name);
    if (section_name.rfind(prefix, 0) != 0) continue;
    const uint64_t off = section(i, 0x18, 8), size = section(i, 0x20, 8);
    if (off > img.size() || size > img.size() - off) return std::nullopt;
    // Records: format (1: no value, 2: a byte, 3: a half word; 4: a size-prefixed value) and
    // attribute. EIATTR_KPARAM_INFO (0x17, 12 bytes): index u32, ordinal u16, offset u16, flags u32
    // whose bits 18 and up hold the parameter's size in bytes.
    std::vector<KernelParam> params;
    for (uint64_t at = off; at + 4 <= off + size;) {
      const unsigned fmt = static_cast<unsigned char>(img[at]),
                     attr = static_cast<unsigned char>(img[at + 1]);
      if (fmt == 4) {
        const uint64_t len = read_le(img, at + 2, 2);
        if (at + 4 + len > off + size) break;
        if (attr == 0x17 && len >= 12) {
          KernelParam p;
          p.ordinal = static_cast<uint32_t>(read_le(img, at + 8, 2));
          p.offset = static_cast<uint32_t>(read_le(img, at + 10, 2));
          p.size = static_cast<uint32_t>(read_le(img, at + 12, 4) >> 18);
          params.push_back(p);
        }
        at += 4 + len;
      } else if (fmt >= 1 && fmt <= 3) {
        at += 4;
      } else {
        break;  // an unknown record: what was read so far stands
      }
    }
    std::sort(params.begin(), params.end(),
              [](const KernelParam& a, const KernelParam& b) { return a.ordinal < b.ordinal; });
    out[section_name.substr(prefix.size())] = std::move(params);
  }
  return out;
}

std::vector<KernelParam> ptx_kernel_params(const std::string& ptx, const std::string& kernel) {
  std::vector<KernelParam> params;
  const std::size_t entry = ptx.find(".entry " + kernel + "(");
  if (entry == std::string::npos) return params;
  const std::size_t close = ptx.find(')', entry);
  std::size_t at = ptx.find(".param", entry);
  uint32_t offset = 0;
  while (at != std::string::npos && at < close) {
    const std::size_t line_end = std::min(ptx.find_first_of(",)", at), close);
    const std::string decl = ptx.substr(at, line_end - at);
    uint32_t size = 0, align = 0;
    for (const auto& [type, bytes] : std::vector<std::pair<std::string, uint32_t>>{{".u64", 8},
                                                                                   {".s64", 8},
                                                                                   {".b64", 8},
                                                                                   {".f64", 8},
                                                                                   {".u32", 4},
                                                                                   {".s32", 4},
                                                                                   {".b32", 4},
                                                                                   {".f32", 4},
                                                                                   {".u16", 2},
                                                                                   {".s16", 2},
                                                                                   {".b16", 2},
                                                                                   {".f16", 2},
                                                                                   {".u8", 1},
                                                                                   {".s8", 1},
                                                                                   {".b8", 1}})
      if (decl.find(type + " ") != std::string::npos) {
        size = bytes;
        break;
      }
    if (const auto a = decl.find(".align "); a != std::string::npos)
      align = static_cast<uint32_t>(std::atoi(decl.c_str() + a + 7));
    if (const auto br = decl.find('['); br != std::string::npos)
      size *= static_cast<uint32_t>(std::atoi(decl.c_str() + br + 1));
    if (size == 0) return {};  // a declaration this reader does not know: say nothing
    if (align == 0) align = std::min<uint32_t>(size, 8);
    offset = (offset + align - 1) / align * align;
    params.push_back({static_cast<uint32_t>(params.size()), offset, size});
    offset += size;
    at = ptx.find(".param", line_end);
  }
  return params;
}

std::vector<std::string> ptx_entry_names(const std::string& ptx) {
  std::vector<std::string> names;
  for (std::size_t at = ptx.find(".entry"); at != std::string::npos;
       at = ptx.find(".entry", at + 6)) {
    std::size_t p = at + 6;
    while (p < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[p]))) ++p;
    std::size_t e = p;
    while (e < ptx.size() &&
           (std::isalnum(static_cast<unsigned char>(ptx[e])) || ptx[e] == '_' || ptx[e] == '$'))
      ++e;
    if (e > p) names.push_back(ptx.substr(p, e - p));
  }
  return names;
}

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
  if (auto all = cubin_kernel_params(r.cubin))
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
  if (load_precompiled(m, opt, r, problem, ok)) return ok;
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
