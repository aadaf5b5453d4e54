#include "cli/base_build.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/embedded_op_files.hpp"
#include "core/sha256.hpp"
#include "core/strict_json.hpp"
#include "runtime/cuda/module_digest.hpp"

namespace fs = std::filesystem;

namespace kgate::cli {
namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<fs::path> module_records(const fs::path& dir) {
  std::vector<fs::path> records;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 18 && name.compare(name.size() - 18, 18, ".kgate-module.json") == 0)
      records.push_back(e.path());
  }
  std::sort(records.begin(), records.end());
  return records;
}

/// The module directory of a build directory (DIR/kgate-modules), or DIR itself when it holds
/// module records; "" when neither.
fs::path module_dir(const fs::path& dir) {
  std::error_code ec;
  if (fs::is_directory(dir / "kgate-modules", ec)) return dir / "kgate-modules";
  if (fs::is_directory(dir, ec) && !module_records(dir).empty()) return dir;
  return {};
}

struct LoadedModule {
  std::string file;
  std::string error;
  nlohmann::json record;
  std::vector<KernelInfo> kernels;
  std::map<std::string, std::string> op_files;  ///< the op files it embedded (path -> bytes)
};

// Reads one module record and loads its module with the registrations captured. Modules stay
// loaded for the life of the process (their kernels' code and CUDA registrations).
LoadedModule load_module(const fs::path& record_path, const std::string& kgate_version) {
  LoadedModule m;
  std::string duplicate;
  try {
    m.record = parse_strict_json(read_file(record_path), &duplicate);
  } catch (const std::exception& e) {
    m.error = record_path.string() + " is not valid JSON: " + e.what();
    return m;
  }
  if (!m.record.is_object() || m.record.value("format", std::string()) != "kgate-module/1") {
    m.error = record_path.string() +
              ": \"format\" is not \"kgate-module/1\" (a module record of another kgate?)";
    return m;
  }
  // The version with the kernel ABI (runtime/kernel.hpp): a module of another layout is never
  // loaded.
  const std::string version = m.record.value("kgate_version", std::string());
  const std::string ours = kgate_version + "+kernel-abi." + std::to_string(KGATE_KERNEL_ABI);
  if (version != ours) {
    m.error = record_path.string() + " was built against kgate " +
              (version.empty() ? "(unknown)" : version) + ", and this is kgate " + ours +
              ": build the base with the same kgate as the head";
    return m;
  }
  m.file = (record_path.parent_path() / m.record.value("module", std::string())).string();
  std::error_code ec;
  if (m.record.value("module", std::string()).empty() || !fs::is_regular_file(m.file, ec)) {
    m.error = record_path.string() + " names module " + m.file +
              ", which does not exist (is the base build complete?)";
    return m;
  }
  // A module loads once per process (dlopen of a loaded file runs no constructor again): the
  // kernels it registered are kept by its canonical path (the head's build given as its own base).
  static std::map<std::string,
                  std::pair<std::vector<KernelInfo>, std::map<std::string, std::string>>>
      loaded;
  const std::string key = fs::weakly_canonical(m.file, ec).string();
  if (const auto it = loaded.find(key); it != loaded.end()) {
    m.kernels = it->second.first;
    m.op_files = it->second.second;
    return m;
  }
  begin_module_capture();
  void* handle = dlopen(m.file.c_str(), RTLD_NOW | RTLD_LOCAL);
  const char* why = handle ? nullptr : dlerror();
  m.kernels = end_module_capture();
  m.op_files = captured_op_files();
  if (!handle) m.error = "cannot load module " + m.file + ": " + (why ? why : "dlopen failed");
  else if (m.kernels.empty()) m.error = "module " + m.file + " registered no kernel";
  else loaded[key] = {m.kernels, m.op_files};
  return m;
}

}  // namespace

BaseBuild load_base_build(const std::string& dir, const std::string& kgate_version) {
  BaseBuild base;
  base.dir = dir;
  const fs::path modules = module_dir(dir);
  if (modules.empty()) {
    base.error = "no kgate-modules directory under " + dir +
                 ": give the build directory of the base commit, built with kgate_add_kernel (and "
                 "KGATE_BUILD_MODULES on, the default)";
    return base;
  }
  const auto records = module_records(modules);
  if (records.empty()) {
    base.error = "no module records (*.kgate-module.json) in " + modules.string() +
                 ": is the base build complete?";
    return base;
  }
  for (const auto& r : records) {
    LoadedModule m = load_module(r, kgate_version);
    if (!m.error.empty()) {
      base.error = m.error;
      return base;
    }
    if (base.build.empty()) {
      base.build = m.record.value("build", nlohmann::json::object());
      base.build["kgate_version"] = kgate_version;
    }
    const std::string digest = cuda::module_code_digest(m.file);
    for (auto& k : m.kernels) {
      if (base.kernels.count(k.name)) {
        base.warnings.push_back("base kernel '" + k.name + "' is registered by two modules (" +
                                base.module_of[k.name] + " and " + m.file + "): the first is used");
        continue;
      }
      k.code_digest = digest;
      if (const auto text = m.op_files.find(k.op_file); text != m.op_files.end())
        base.op_file_text[k.name] = text->second;
      k.op_file.clear();  // the head's op definition judges both sides
      base.module_of[k.name] = m.file;
      const std::string name = k.name;
      base.kernels.emplace(name, std::move(k));
    }
  }
  return base;
}

std::vector<std::string> build_differences(const nlohmann::json& head, const nlohmann::json& base) {
  std::vector<std::string> out;
  if (!head.is_object() || !base.is_object() || head.empty() || base.empty()) return out;
  for (const char* key : {"cxx_compiler", "cuda_compiler", "build_type", "cxx_flags", "cuda_flags",
                          "cuda_architectures"}) {
    const std::string h = head.value(key, std::string()), b = base.value(key, std::string());
    if (h != b)
      out.push_back(std::string(key) + ": the head's is '" + h + "', the base's '" + b + "'");
  }
  return out;
}

namespace {

fs::path head_module_dir() {
  if (const char* env = std::getenv("KGATE_MODULE_DIR"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path().parent_path() / "kgate-modules";
}

}  // namespace

std::string head_build_dir() {
  const fs::path dir = head_module_dir();
  std::error_code ec;
  return !dir.empty() && fs::is_directory(dir, ec) ? dir.parent_path().string() : std::string();
}

HeadBuild head_build(const std::string& kgate_version) {
  HeadBuild head;
  const fs::path dir = head_module_dir();
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) return head;
  for (const auto& r : module_records(dir)) {
    LoadedModule m = load_module(r, kgate_version);
    if (!m.error.empty()) continue;  // no digest: the kernel is timed
    if (head.build.empty()) head.build = m.record.value("build", nlohmann::json::object());
    const std::string digest = cuda::module_code_digest(m.file);
    for (const auto& k : m.kernels) head.digests.emplace(k.name, digest);
  }
  return head;
}

}  // namespace kgate::cli
