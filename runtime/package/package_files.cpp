// Resolution of manifest paths inside the package directory, and header discovery for NVRTC.
#include "runtime/package/package_files.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/safe_text.hpp"
#include "runtime/package/manifest.hpp"

namespace kgate::package {

namespace fs = std::filesystem;

namespace {

/// A file with more than one hard link may be a second name of a file outside the package (a hard
/// link, unlike a symbolic one, cannot be told from the original), so it is refused.
std::string hard_link_problem(const fs::path& canon, const std::string& shown) {
  std::error_code ec;
  const auto links = fs::hard_link_count(canon, ec);
  if (ec) return quote_untrusted(shown) + " cannot be read: " + ec.message();
  if (links > 1)
    return quote_untrusted(shown) + " has " + std::to_string(links) +
           " hard links; a package file must have exactly one (another name may be a file outside "
           "the package): copy it instead of linking it";
  return {};
}

}  // namespace

bool is_inside(const fs::path& root, const fs::path& p) {
  auto r = root.begin();
  auto q = p.begin();
  for (; r != root.end(); ++r, ++q) {
    if (r->empty()) continue;  // a trailing separator of root
    if (q == p.end() || *r != *q) return false;
  }
  return true;
}

bool climbs(const fs::path& p) { return std::find(p.begin(), p.end(), fs::path("..")) != p.end(); }

std::string package_path_problem(const fs::path& root, const std::string& relative, PathKind kind,
                                 fs::path* resolved) {
  if (relative.empty()) return "expected a non-empty path relative to the package directory";
  for (char c : relative)
    if (static_cast<unsigned char>(c) < 0x20)
      return quote_untrusted(relative) +
             " contains a control character; expected a plain relative path";
  const fs::path rel(relative);
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
    return quote_untrusted(relative) +
           " is an absolute path; expected a path relative to the package directory";
  if (climbs(rel))
    return quote_untrusted(relative) +
           " contains \"..\"; expected a path inside the package directory";
  std::error_code ec;
  const fs::path joined = root / rel;
  if (!fs::exists(fs::symlink_status(joined, ec)) || !fs::exists(joined, ec))
    return quote_untrusted(relative) + " does not exist in the package directory";
  const fs::path canon = fs::canonical(joined, ec);
  if (ec) return quote_untrusted(relative) + " cannot be resolved: " + ec.message();
  if (!is_inside(root, canon))
    return quote_untrusted(relative) + " resolves to " + quote_untrusted(canon.string()) +
           ", outside the package directory (through a symbolic link); expected a path inside it";
  if (kind == PathKind::directory && !fs::is_directory(canon, ec))
    return quote_untrusted(relative) + " is not a directory; expected a directory of headers";
  if (kind == PathKind::source || kind == PathKind::binary || kind == PathKind::data) {
    const bool binary = kind != PathKind::source;
    if (!fs::is_regular_file(canon, ec))
      return quote_untrusted(relative) + " is not a regular file; expected " +
             (kind == PathKind::data ? "a safetensors file"
              : binary               ? "a CUBIN, fatbin or PTX file"
                                     : "a CUDA source file");
    const auto size = fs::file_size(canon, ec);
    if (ec) return quote_untrusted(relative) + " cannot be read: " + ec.message();
    const std::uintmax_t limit = binary ? kMaxBinaryBytes : kMaxSourceBytes;
    if (size > limit)
      return quote_untrusted(relative) + " has " + std::to_string(size) +
             " bytes; expected at most " + std::to_string(limit) +
             (binary ? " (256 MiB)" : " (1 MiB)");
    if (std::string err = hard_link_problem(canon, relative); !err.empty()) return err;
  }
  if (resolved) *resolved = canon;
  return {};
}

std::string scan_include_dir(const fs::path& root, const std::string& include_dir,
                             std::vector<PackageFile>& out, std::size_t& files,
                             std::uintmax_t& bytes) {
  static const std::vector<std::string> kHeaderExtensions = {".h",   ".hh",  ".hpp", ".hxx", ".cuh",
                                                             ".inl", ".inc", ".ipp", ".tcc"};
  fs::path dir;
  std::string err = package_path_problem(root, include_dir, PathKind::directory, &dir);
  if (!err.empty()) return err;
  std::error_code ec;
  std::vector<PackageFile> found;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string ext = p.extension().string();
    if (std::find(kHeaderExtensions.begin(), kHeaderExtensions.end(), ext) ==
        kHeaderExtensions.end())
      continue;
    const fs::path rel_to_root = p.lexically_relative(root);
    if (it->is_directory(ec)) continue;
    const fs::path canon = fs::canonical(p, ec);
    if (ec) return quote_untrusted(rel_to_root.string()) + " cannot be resolved: " + ec.message();
    if (!is_inside(root, canon))
      return quote_untrusted(rel_to_root.string()) + " resolves to " +
             quote_untrusted(canon.string()) +
             ", outside the package directory (through a symbolic link); expected a path inside it";
    if (!fs::is_regular_file(canon, ec)) continue;
    const auto size = fs::file_size(canon, ec);
    if (ec) return quote_untrusted(rel_to_root.string()) + " cannot be read: " + ec.message();
    if (size > kMaxSourceBytes)
      return quote_untrusted(rel_to_root.string()) + " has " + std::to_string(size) +
             " bytes; expected at most " + std::to_string(kMaxSourceBytes) + " (1 MiB)";
    if (std::string err = hard_link_problem(canon, rel_to_root.string()); !err.empty()) return err;
    if (++files > kMaxHeaderFiles)
      return "the include directories hold more than " + std::to_string(kMaxHeaderFiles) +
             " header files; expected fewer";
    bytes += size;
    if (bytes > kMaxHeaderBytes)
      return "the include directories hold more than " + std::to_string(kMaxHeaderBytes) +
             " bytes of headers; expected less";
    found.push_back({p.lexically_relative(dir).generic_string(), canon});
  }
  if (ec) return quote_untrusted(include_dir) + " cannot be listed: " + ec.message();
  // Directory order is unspecified: sort so that names and cache keys are stable.
  std::sort(found.begin(), found.end(),
            [](const PackageFile& a, const PackageFile& b) { return a.name < b.name; });
  out.insert(out.end(), found.begin(), found.end());
  return {};
}

std::string read_package_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::package, "cannot read " + quote_untrusted(path.string()));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in.good() && !in.eof())
    throw Error(ErrorKind::package, "cannot read " + quote_untrusted(path.string()));
  return ss.str();
}

}  // namespace kgate::package
