// A package's precompiled kernel files (PackageManifest::cubins, fatbin, ptx): choosing the one for
// the GPU's architecture, reading it from the package and checking the manifest's kernel names
// against its symbols, in place of an NVRTC compile.
#include <algorithm>
#include <chrono>

#include "core/safe_text.hpp"
#include "core/sha256.hpp"
#include "core/suggest.hpp"
#include "runtime/package/kernel_binary.hpp"
#include "runtime/package/nvrtc_cache_internal.hpp"
#include "runtime/package/package_files.hpp"

namespace kgate::package::compile_internal {

namespace fs = std::filesystem;

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

}  // namespace kgate::package::compile_internal
