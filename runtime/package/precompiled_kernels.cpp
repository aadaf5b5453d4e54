// A package's precompiled kernel files (PackageManifest::cubins, fatbin, ptx): choosing the one for
// the GPU's architecture, reading it from the package and resolving the manifest's kernel names
// (C++ names or symbols, kernel_names.hpp) to its symbols, in place of an NVRTC compile.
#include <algorithm>
#include <chrono>
#include <cstdlib>

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
    if (!fatbin_images(image)) {
      problem = {file, field,
                 quote_untrusted(rel) +
                     " is not a fatbin (as nvcc -fatbin writes); a CUBIN goes under \"cubin\", PTX "
                     "under \"ptx\""};
      ok = false;
      return true;
    }
    // The CUBIN for this GPU's architecture, else every image kgate can read.
    if (auto found = fatbin_kernel_names(image, arch_number(opt.arch))) names = std::move(*found);
    else names_known = false;  // every image compressed past what kgate can read
  }
  for (const auto& expr : m.name_expressions()) {
    if (!names_known) {
      // Only a symbol can be looked up unread: a C++ name needs the file's symbols.
      if (expr.find_first_of("<:( ") != std::string::npos) {
        problem = {file, field,
                   "kernel " + quote_untrusted(expr) + " is a C++ name, but the images of " +
                       quote_untrusted(rel) +
                       " are compressed in a way kgate cannot read (Zstandard needs the "
                       "system's libzstd.so.1), so its symbols are unknown: rebuild it with nvcc "
                       "--no-compress, or name the kernel by its symbol"};
        ok = false;
        return true;
      }
      r.lowered_names[expr] = expr;  // checked when the fatbin is loaded
      continue;
    }
    const std::vector<std::string> matches = match_kernel_name(expr, names);
    if (matches.size() != 1) {
      problem = {file, field, kernel_name_problem(expr, matches, names, rel)};
      ok = false;
      return true;
    }
    r.lowered_names[expr] = matches.front();
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
