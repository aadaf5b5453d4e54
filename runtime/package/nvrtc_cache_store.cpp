// The content-addressed CUBIN cache of NVRTC compiles: keys, entries, the key that authenticates
// them, and the cache directory's checks.
//
// Cache layout: <cache_dir>/nvrtc/<key[0:2]>/<key>.cubin and <key>.json (lowered names, the CUBIN's
// SHA-256, an HMAC of both under a key kept outside the cache, provenance). Entries are written to
// a fresh temporary file and renamed, the .json last, so a reader sees a complete entry or none. An
// entry whose CUBIN does not match its digest, whose MAC does not verify, or that is a link, not a
// regular file or another user's, is a miss: it is recompiled and replaced. So the cache cannot
// change what runs: only a compile of the package's own sources can put a CUBIN there.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/safe_text.hpp"
#include "core/sha256.hpp"
#include "runtime/package/nvrtc_cache_internal.hpp"
#include "runtime/package/package_files.hpp"

namespace kgate::package {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// /2: entries carry an HMAC under a key kept outside the cache, and the key covers the toolkit's
// headers (the only files outside the package a compile can read).
constexpr const char* kCacheFormat = "kgate-nvrtc-cache/2";
/// Cache files larger than this are not read.
constexpr std::uintmax_t kMaxCacheFileBytes = 512ULL << 20;

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

/// Says once per process that the cache is off for want of a place to keep its key.
void warn_no_cache_key() {
  static std::atomic<bool> said{false};
  if (said.exchange(true)) return;
  std::fprintf(stderr,
               "kgate: warning: the NVRTC cache is off: there is no place for its key (set HOME, "
               "KGATE_CACHE_KEY_FILE or KGATE_CACHE_KEY); every package is compiled\n");
}

}  // namespace

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

namespace compile_internal {

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

CacheSlot open_cache_slot(const CompileOptions& opt, const std::string& key) {
  CacheSlot slot;
  const fs::path base = opt.cache_dir.empty() ? default_cache_dir() : opt.cache_dir;
  if (opt.use_cache) slot.mac_key = cache_mac_key(base, opt.cache_key_file);
  if (opt.use_cache && !slot.mac_key) warn_no_cache_key();
  if (!slot.mac_key) return slot;
  make_cache_dir(base);
  make_cache_dir(base / "nvrtc");
  const fs::path dir = base / "nvrtc" / key.substr(0, 2);
  make_cache_dir(dir);
  slot.cubin_path = dir / (key + ".cubin");
  slot.meta_path = dir / (key + ".json");
  return slot;
}

bool load_cache_entry(const CacheSlot& slot, const std::string& key, CompileResult& r) {
  return slot.mac_key && load_entry(slot.cubin_path, slot.meta_path, key, *slot.mac_key, r);
}

void store_cache_entry(const CacheSlot& slot, const PackageManifest& m, const CompileOptions& opt,
                       const Inputs& in, CompileResult& r) {
  if (!slot.mac_key) return;
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
                     {"mac", entry_mac(*slot.mac_key, r.key, digest, r.lowered_names)},
                     {"compile_seconds", r.compile_seconds}};
  // A cache that cannot be written costs the next run a compile, nothing more.
  if (write_atomic(slot.cubin_path, r.cubin) && write_atomic(slot.meta_path, meta.dump(2) + "\n"))
    r.cache_entry = slot.cubin_path;
}

}  // namespace compile_internal

}  // namespace kgate::package
