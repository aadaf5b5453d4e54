// A package's precompiled kernel files (PackageManifest::cubins, fatbin, ptx): choosing the one for
// the GPU's architecture, reading it from the package and resolving the manifest's kernel names
// (C++ names or symbols, kernel_names.hpp) to its symbols, in place of an NVRTC compile.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>

#include "core/safe_text.hpp"
#include "core/sha256.hpp"
#include "runtime/package/kernel_binary.hpp"
#include "runtime/package/kernel_names.hpp"
#include "runtime/package/nvrtc_cache_internal.hpp"
#include "runtime/package/package_files.hpp"

namespace kgate::package::compile_internal {

namespace fs = std::filesystem;

namespace {
uint32_t arch_number(const std::string& arch) {
  return static_cast<uint32_t>(std::strtoul(arch.c_str() + 3, nullptr, 10));  // "sm_90a" -> 90
}
}  // namespace

namespace {

// Reads one precompiled file of the package (`kind` cubin, fatbin or ptx, at package path `rel`,
// named `field` in kgate.json) into `r`, and resolves `exprs` to its symbols. False with the
// problem when it cannot.
bool read_image(const PackageManifest& m, const CompileOptions& opt, const std::string& kind,
                const std::string& field, const std::string& rel,
                const std::vector<std::string>& exprs, CompileResult& r, ManifestProblem& problem) {
  const std::string file = m.manifest_path.string();
  const auto t0 = std::chrono::steady_clock::now();
  fs::path path;
  if (const std::string err = package_path_problem(m.dir, rel, PathKind::binary, &path);
      !err.empty()) {
    problem = {file, field, err};
    return false;
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
      return false;
    }
    names = *found;
  } else if (kind == "ptx") {
    names = ptx_entry_names(image);
    if (names.empty()) {
      problem = {
          file, field,
          quote_untrusted(rel) + " holds no .entry: expected PTX text with the package's kernels"};
      return false;
    }
    image.push_back('\0');  // cuModuleLoadData reads PTX as a C string
  } else {
    if (!fatbin_images(image)) {
      problem = {file, field,
                 quote_untrusted(rel) +
                     " is not a fatbin (as nvcc -fatbin writes); a CUBIN goes under \"cubin\", PTX "
                     "under \"ptx\""};
      return false;
    }
    // The CUBIN for this GPU's architecture, else every image kgate can read.
    if (auto found = fatbin_kernel_names(image, arch_number(opt.arch))) names = std::move(*found);
    else names_known = false;  // every image compressed past what kgate can read
  }
  for (const auto& expr : exprs) {
    if (!names_known) {
      // Only a symbol can be looked up unread: a C++ name needs the file's symbols.
      if (expr.find_first_of("<:( ") != std::string::npos) {
        problem = {file, field,
                   "kernel " + quote_untrusted(expr) + " is a C++ name, but the images of " +
                       quote_untrusted(rel) +
                       " are compressed in a way kgate cannot read (Zstandard needs the "
                       "system's libzstd.so.1), so its symbols are unknown: rebuild it with nvcc "
                       "--no-compress, or name the kernel by its symbol"};
        return false;
      }
      r.lowered_names[expr] = expr;  // checked when the fatbin is loaded
      continue;
    }
    const std::vector<std::string> matches = match_kernel_name(expr, names);
    if (matches.size() != 1) {
      problem = {file, field, kernel_name_problem(expr, matches, names, rel)};
      return false;
    }
    r.lowered_names[expr] = matches.front();
  }
  r.cubin = std::move(image);
  r.precompiled = kind;
  r.precompiled_path = rel;
  r.key = sha256_hex(kind + "\n" + opt.arch + "\n" + r.cubin);
  r.options = {"--gpu-architecture=" + opt.arch};
  r.total_seconds = seconds_since(t0);
  return true;
}

}  // namespace

bool load_precompiled(const PackageManifest& m, const CompileOptions& opt, CompileResult& r,
                      ManifestProblem& problem, bool& ok) {
  const std::string file = m.manifest_path.string();
  if (!m.build_compiler.empty() && m.fatbin.empty()) {
    problem = {file, "build",
               "the package is compiled by " + m.build_compiler +
                   " when it is packed, and this copy holds no fatbin yet: run kgate pack " +
                   quote_untrusted(m.dir.string()) +
                   " OUT and check or validate OUT (kgate check and validate never run nvcc: it "
                   "runs the host compiler and reads host headers)"};
    ok = false;
    return true;
  }
  // Launches with a CUBIN of their own for this architecture (Launch::cubins), by file.
  std::map<std::string, std::vector<std::size_t>> own;
  std::vector<std::size_t> shared;
  for (std::size_t i = 0; i < m.launches.size(); ++i) {
    if (auto it = m.launches[i].cubins.find(opt.arch); it != m.launches[i].cubins.end())
      own[it->second].push_back(i);
    else shared.push_back(i);
  }
  std::string kind, field, rel;
  if (auto it = m.cubins.find(opt.arch); it != m.cubins.end()) {
    kind = "cubin", field = "cubin." + opt.arch, rel = it->second;
  } else if (!m.fatbin.empty()) {
    kind = "fatbin", field = "fatbin", rel = m.fatbin;
  } else if (!m.ptx.empty()) {
    kind = "ptx", field = "ptx", rel = m.ptx;
  } else if ((!m.cubins.empty() && m.sources.empty()) || (!own.empty() && !shared.empty())) {
    std::string archs;
    for (const auto& [a, path] : m.cubins) archs += (archs.empty() ? "" : ", ") + a;
    problem = {
        file, "cubin",
        (archs.empty() ? std::string("the package ships no CUBIN of its own")
                       : "the package ships CUBINs for " + archs + " only") +
            ", and no fatbin, PTX or sources" +
            (shared.empty() ? std::string() : " for the launches without a CUBIN of their own") +
            "; this GPU is " + opt.arch + " (a CUBIN runs only on its own architecture): add \"" +
            opt.arch +
            "\" to \"cubin\", a \"ptx\" file (the driver compiles it for any newer GPU), or "
            "\"sources\""};
    ok = false;
    return true;
  } else if (own.empty()) {
    return false;  // compile the sources
  }
  if (own.empty()) {
    ok = read_image(m, opt, kind, field, rel, m.name_expressions(), r, problem);
    return true;
  }
  // Several modules: the package's (for the launches without their own), then one per file.
  std::vector<std::pair<std::vector<std::size_t>, CompileResult>> units;
  if (!shared.empty()) {
    CompileResult u;
    if (!read_image(m, opt, kind, field, rel, m.name_expressions(shared), u, problem)) {
      ok = false;
      return true;
    }
    units.emplace_back(shared, std::move(u));
  }
  for (const auto& [path, launches] : own) {
    CompileResult u;
    const std::string f = m.launches[launches.front()].field + ".cubin." + opt.arch;
    if (!read_image(m, opt, "cubin", f, path, m.name_expressions(launches), u, problem)) {
      ok = false;
      return true;
    }
    units.emplace_back(launches, std::move(u));
  }
  r = CompileResult{};
  r.cubin = units.front().second.cubin;
  r.key = units.front().second.key;
  r.precompiled = units.front().second.precompiled;
  r.precompiled_path = units.front().second.precompiled_path;
  r.options = units.front().second.options;
  for (std::size_t u = 0; u < units.size(); ++u) {
    for (const auto& [name, lowered] : units[u].second.lowered_names)
      r.lowered_names.emplace(name, lowered);
    r.total_seconds += units[u].second.total_seconds;
    for (std::size_t i : units[u].first)
      for (DType d : m.guard.dtypes) r.unit_of[{d, i}] = u;
    r.units.push_back(std::move(units[u].second));
  }
  ok = true;
  return true;
}

}  // namespace kgate::package::compile_internal
