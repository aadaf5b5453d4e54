// kgate pack: copies a source package and the include directories it reaches outside itself into a
// self-contained package, and runs its nvcc build where it asks for one (see pack.hpp).
#include "runtime/package/pack.hpp"

#include <unistd.h>

#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/safe_text.hpp"
#include "core/sha256.hpp"
#include "core/strict_json.hpp"
#include "runtime/package/manifest.hpp"
#include "runtime/package/nvcc_build.hpp"
#include "runtime/package/package_files.hpp"

namespace kgate::package {

namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;

namespace {

std::string shown(const std::string& s) { return quote_untrusted(s); }

class Packer {
 public:
  Packer(fs::path src, fs::path tmp) : src_(std::move(src)), tmp_(std::move(tmp)) {
    manifest_ = (src_ / kManifestFileName).string();
  }

  PackResult run() {
    const std::string text = read_package_file(src_ / kManifestFileName);
    std::string duplicate;
    try {
      parse_strict_json(text, &duplicate);
    } catch (const std::exception& e) {
      fail("", "is not valid JSON: " + json_error_text(e));
    }
    if (!duplicate.empty()) fail("", "has the key " + shown(duplicate) + " twice in one object");
    ordered_json doc = ordered_json::parse(text);  // again, keeping the key order for the rewrite
    if (!doc.is_object()) fail("", "must hold a JSON object");

    if (auto it = doc.find("sources"); it != doc.end()) {
      if (!it->is_array()) fail("sources", "expected an array of paths");
      for (std::size_t i = 0; i < it->size(); ++i)
        copy_listed((*it)[i], "sources[" + std::to_string(i) + "]");
    }
    for (const char* key : {"op_file", "fatbin", "ptx"})
      if (auto it = doc.find(key); it != doc.end()) copy_listed(*it, key);
    if (auto it = doc.find("captured_inputs"); it != doc.end()) {
      if (!it->is_array()) fail("captured_inputs", "expected an array of paths");
      for (std::size_t i = 0; i < it->size(); ++i)
        copy_listed((*it)[i], "captured_inputs[" + std::to_string(i) + "]");
    }
    if (auto it = doc.find("cubin"); it != doc.end()) {
      if (!it->is_object()) fail("cubin", "expected an object of CUBIN files per architecture");
      for (auto e = it->begin(); e != it->end(); ++e) copy_listed(e.value(), "cubin." + e.key());
    }
    // A launch's own CUBINs (a kernel compiled once per specialization).
    if (auto it = doc.find("launches"); it != doc.end() && it->is_array())
      for (std::size_t i = 0; i < it->size(); ++i) {
        const auto& l = (*it)[i];
        if (!l.is_object() || !l.contains("cubin")) continue;
        const std::string field = "launches[" + std::to_string(i) + "].cubin";
        if (!l.at("cubin").is_object())
          fail(field, "expected an object of CUBIN files per architecture");
        for (auto e = l.at("cubin").begin(); e != l.at("cubin").end(); ++e)
          copy_listed(e.value(), field + "." + e.key());
      }
    // The package's license and notice files (LICENSE*, LICENCE*, COPYING*, NOTICE* beside
    // kgate.json) travel with it: a packed package is what gets redistributed.
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(src_, ec)) {
      if (!e.is_regular_file(ec)) continue;
      const std::string name = e.path().filename().string();
      std::string upper = name;
      for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      for (const char* prefix : {"LICENSE", "LICENCE", "COPYING", "NOTICE"})
        if (upper.rfind(prefix, 0) == 0) {
          copy(e.path(), name, name);
          break;
        }
    }
    bool rewritten = false;
    if (auto it = doc.find("include_dirs"); it != doc.end()) {
      if (!it->is_array()) fail("include_dirs", "expected an array of directories");
      for (std::size_t i = 0; i < it->size(); ++i) {
        const std::string field = "include_dirs[" + std::to_string(i) + "]";
        if (!(*it)[i].is_string()) fail(field, "expected a directory path");
        const std::string dir = (*it)[i].get<std::string>();
        const std::string packed = include_dir(dir, field);
        if (packed != dir) {
          result_.rewritten.push_back(field + ": " + dir + " -> " + packed);
          (*it)[i] = packed;
          rewritten = true;
        }
      }
    }
    if (auto it = doc.find("build"); it != doc.end()) {
      build(doc);
      rewritten = true;
    }
    // The manifest: the author's bytes when nothing changed, else the rewritten document.
    const std::string out_text = rewritten ? doc.dump(2) + "\n" : text;
    write(tmp_ / kManifestFileName, out_text);
    result_.files.insert(result_.files.begin(),
                         {kManifestFileName, kManifestFileName, Sha256().update(out_text).hex()});

    ordered_json record = {
        {"format", "kgate-pack/1"}, {"source", src_.string()}, {"files", ordered_json::array()}};
    for (const auto& f : result_.files)
      record["files"].push_back({{"path", f.path}, {"from", f.from}, {"sha256", f.sha256}});
    write(tmp_ / kPackRecordFileName, record.dump(2) + "\n");
    return std::move(result_);
  }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& message) {
    throw Error(ErrorKind::package,
                manifest_ + (field.empty() ? " " : ": " + field + ": ") + message);
  }

  /// "build": compiles the packed copy with nvcc into _built/NAME.fatbin, names it as the package's
  /// "fatbin" and records what ran as "build.record" (nvcc_build.hpp).
  void build(ordered_json& doc) {
    const ordered_json& b = doc["build"];
    if (!b.is_object()) fail("build", "expected an object such as {\"compiler\": \"nvcc\"}");
    if (b.value("compiler", std::string()) != "nvcc")
      fail("build.compiler", "expected \"nvcc\" (the compiler kgate pack runs)");
    if (b.contains("record"))
      fail("build.record",
           "is written by kgate pack; this package was packed already: pack its source package");
    if (doc.contains("fatbin"))
      fail("fatbin",
           "an nvcc build (\"build\") writes the package's fatbin; remove \"fatbin\" from the "
           "source package");
    BuildSpec spec;
    const auto strings = [&](const char* key, std::vector<std::string>& out) {
      if (!b.contains(key)) return;
      const ordered_json& v = b[key];
      if (!v.is_array()) fail(std::string("build.") + key, "expected an array of strings");
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_string())
          fail(std::string("build.") + key + "[" + std::to_string(i) + "]", "expected a string");
        out.push_back(v[i].get<std::string>());
      }
    };
    strings("archs", spec.archs);
    strings("flags", spec.flags);
    if (b.contains("instantiate")) {
      if (!b["instantiate"].is_boolean()) fail("build.instantiate", "expected true or false");
      spec.instantiate = b["instantiate"].get<bool>();
    }
    // The manifest as packed so far, read back for what nvcc needs: the sources, the include
    // directories (as packed) and every launch's kernel name (for_each expanded).
    write(tmp_ / kManifestFileName, doc.dump(2) + "\n");
    PackageManifest m;
    const auto problems = check_manifest(tmp_, {}, &m);
    if (!problems.empty())
      throw Error(ErrorKind::package,
                  "kgate pack: " + manifest_ + " cannot be built:\n" + format_problems(problems));
    const BuildRecord record =
        nvcc_build(tmp_, m.name, m.sources, m.include_dirs, m.name_expressions(), spec, manifest_);
    for (const auto& made : {record.unit, record.fatbin})
      result_.files.push_back(
          {made, "(kgate pack: nvcc)", Sha256().update(read_package_file(tmp_ / made)).hex()});
    copied_.insert(record.unit);
    copied_.insert(record.fatbin);
    doc["fatbin"] = record.fatbin;
    doc["build"]["record"] = {{"fatbin", record.fatbin},
                              {"unit", record.unit},
                              {"command", record.command},
                              {"nvcc_version", record.nvcc_version},
                              {"host_compiler", record.host_compiler},
                              {"host_compiler_version", record.host_compiler_version},
                              {"kernels", record.kernels}};
    result_.rewritten.push_back("fatbin: " + record.fatbin + " (built by nvcc: build.record)");
  }

  /// A file the manifest names: inside the source package, copied to the same relative path.
  void copy_listed(const ordered_json& v, const std::string& field) {
    if (!v.is_string()) fail(field, "expected a path relative to the package");
    const std::string rel = v.get<std::string>();
    fs::path resolved;
    const std::string err = package_path_problem(src_, rel, PathKind::any, &resolved);
    if (!err.empty())
      fail(field,
           err + (climbs(rel)
                      ? " (only include_dirs may reach outside a source package; move the file in)"
                      : ""));
    copy(resolved, own_path(fs::path(rel).lexically_normal().string(), field), rel);
  }

  /// A path of the source package itself, which must stay clear of _packed/ (kgate pack's own).
  std::string own_path(const std::string& rel, const std::string& field) {
    if (!rel.empty() && fs::path(rel).begin()->string() == "_packed")
      fail(field, shown(rel) +
                      " is under _packed/, where kgate pack puts the headers it copies from "
                      "outside the package; rename that directory");
    if (!rel.empty() && fs::path(rel).begin()->string() == kBuildDir)
      fail(field, shown(rel) + " is under " + kBuildDir +
                      "/, where kgate pack puts what nvcc builds; rename that directory");
    return rel;
  }

  /// An include directory: one inside the package keeps its path; one outside is copied to
  /// _packed/<its name> and the manifest entry is rewritten to that. Returns the entry to write.
  std::string include_dir(const std::string& dir, const std::string& field) {
    if (dir.empty()) fail(field, "expected a non-empty directory path");
    const fs::path rel(dir);
    if (rel.is_absolute() || rel.has_root_name())
      fail(field, shown(dir) + " is an absolute path; write it relative to the package directory");
    std::error_code ec;
    const fs::path canon = fs::canonical(src_ / rel, ec);
    if (ec || !fs::is_directory(canon, ec))
      fail(field, shown(dir) + " is not a directory (relative to " + shown(src_.string()) + ")");
    std::vector<PackageFile> headers;
    std::size_t files = 0;
    std::uintmax_t bytes = 0;
    if (is_inside(src_, canon)) {
      const std::string inside = canon.lexically_relative(src_).string();
      const std::string err =
          scan_include_dir(src_, inside.empty() ? "." : inside, headers, files, bytes);
      if (!err.empty()) fail(field, err);
      for (const auto& h : headers)
        copy(h.path, own_path((fs::path(inside) / h.name).lexically_normal().string(), field),
             (fs::path(dir) / h.name).lexically_normal().string());
      // "sub/../inc" would not pass as a packed path: write it plainly.
      return !climbs(dir) ? dir : (inside.empty() ? "." : inside);
    }
    std::string target = "_packed/" + canon.filename().string();
    for (int n = 2; !used_dirs_.insert(target).second; ++n)
      target = "_packed/" + canon.filename().string() + "-" + std::to_string(n);
    const std::string err = scan_include_dir(canon, ".", headers, files, bytes);
    if (!err.empty()) fail(field, shown(dir) + ": " + err);
    if (headers.empty()) fail(field, shown(dir) + " holds no header files (.h .cuh .hpp ...)");
    for (const auto& h : headers)
      copy(h.path, (fs::path(target) / h.name).lexically_normal().string(),
           (fs::path(dir) / h.name).lexically_normal().string());
    return target;
  }

  void copy(const fs::path& from, const std::string& to, const std::string& shown_from) {
    if (!copied_.insert(to).second) return;  // a source inside an include directory, say
    const std::string bytes = read_package_file(from);
    write(tmp_ / to, bytes);
    result_.files.push_back({to, shown_from, Sha256().update(bytes).hex()});
  }

  static void write(const fs::path& path, const std::string& bytes) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    f.close();
    if (ec || !f) throw Error(ErrorKind::package, "cannot write " + shown(path.string()));
  }

  fs::path src_, tmp_;
  std::string manifest_;
  PackResult result_;
  std::set<std::string> copied_, used_dirs_;
};

}  // namespace

std::vector<std::string> pack_drift(const fs::path& dir) {
  std::vector<std::string> out;
  const fs::path record_path = dir / kPackRecordFileName;
  std::error_code ec;
  if (!fs::exists(record_path, ec)) return out;
  const fs::path root = fs::canonical(dir, ec);
  if (ec) return out;
  try {
    const auto record = nlohmann::json::parse(read_package_file(record_path));
    for (const auto& f : record.at("files")) {
      const std::string path = f.at("path").get<std::string>();
      fs::path resolved;
      if (!package_path_problem(root, path, PathKind::any, &resolved).empty()) {
        out.push_back(path + " (missing)");
        continue;
      }
      if (Sha256().update(read_package_file(resolved)).hex() != f.at("sha256").get<std::string>())
        out.push_back(path + " (changed)");
    }
  } catch (const std::exception& e) {
    out.push_back(std::string(kPackRecordFileName) + " (unreadable: " + e.what() + ")");
  }
  return out;
}

PackResult pack_package(const fs::path& src_dir, const fs::path& out_dir,
                        const std::function<bool(const PackResult&)>& accept) {
  std::error_code ec;
  const fs::path src = fs::canonical(src_dir, ec);
  if (ec || !fs::is_directory(src))
    throw Error(ErrorKind::usage, "kgate pack: " + shown(src_dir.string()) + " is not a directory");
  if (!fs::exists(src / kManifestFileName))
    throw Error(ErrorKind::usage, "kgate pack: " + shown(src_dir.string()) + " has no " +
                                      kManifestFileName + " (give the package's directory)");
  const fs::path out = fs::weakly_canonical(fs::absolute(out_dir), ec);
  if (ec || out.filename().empty())
    throw Error(ErrorKind::usage,
                "kgate pack: " + shown(out_dir.string()) + " is not a usable directory name");
  if (is_inside(out, src) || is_inside(src, out))
    throw Error(ErrorKind::usage,
                "kgate pack: the packed package " + shown(out.string()) +
                    " and the source package " + shown(src.string()) +
                    " must not contain one another; write it elsewhere (e.g. the build tree)");
  if (fs::exists(out, ec)) {
    const bool empty_dir = fs::is_directory(out, ec) && fs::is_empty(out, ec);
    if (!empty_dir && !fs::exists(out / kPackRecordFileName, ec))
      throw Error(
          ErrorKind::usage,
          "kgate pack: " + shown(out.string()) + " exists and is not a packed package (no " +
              kPackRecordFileName +
              "); kgate pack replaces only its own output: choose a new or empty directory");
  }
  fs::create_directories(out.parent_path(), ec);
  const fs::path tmp = out.parent_path() /
                       ("." + out.filename().string() + ".packing-" + std::to_string(::getpid()));
  fs::remove_all(tmp, ec);
  // The earlier pack is moved aside, not deleted, until the new one is in place: a failure on the
  // way puts it back, so a failed pack never loses the one that was there.
  const fs::path aside = out.parent_path() / ("." + out.filename().string() + ".replaced-" +
                                              std::to_string(::getpid()));
  fs::remove_all(aside, ec);
  PackResult result;
  bool moved_aside = false, placed = false;
  try {
    result = Packer(src, tmp).run();
    if (fs::exists(out)) {
      fs::rename(out, aside, ec);
      if (ec)
        throw Error(ErrorKind::package,
                    "kgate pack: cannot replace " + shown(out.string()) + ": " + ec.message());
      moved_aside = true;
    }
    fs::rename(tmp, out, ec);
    if (ec)
      throw Error(ErrorKind::package, "kgate pack: cannot move the packed package to " +
                                          shown(out.string()) + ": " + ec.message());
    placed = true;
    if (accept && !accept(result)) {
      fs::remove_all(out, ec);
      if (moved_aside) fs::rename(aside, out, ec);
      result.accepted = false;
      return result;
    }
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    if (placed) fs::remove_all(out, ignored);
    if (moved_aside) fs::rename(aside, out, ignored);
    throw;
  }
  fs::remove_all(aside, ec);
  return result;
}

}  // namespace kgate::package
