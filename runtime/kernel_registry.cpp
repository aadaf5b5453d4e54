// The process-wide list of kernels under test.
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "core/error.hpp"
#include "core/suggest.hpp"
#include "runtime/embedded_op_files.hpp"
#include "runtime/kernel.hpp"

namespace kgate {
namespace {
std::vector<KernelInfo>& registry() {
  static std::vector<KernelInfo> kernels;
  return kernels;
}
std::map<std::string, std::string>& embedded() {
  static std::map<std::string, std::string> files;
  return files;
}
// A base module's registrations while it loads (begin_module_capture): null when not capturing.
std::vector<KernelInfo>*& capture() {
  static std::vector<KernelInfo>* kernels = nullptr;
  return kernels;
}
// The op files the last captured module embedded (path -> bytes).
std::map<std::string, std::string>& captured_files() {
  static std::map<std::string, std::string> files;
  return files;
}
}  // namespace

void begin_module_capture() {
  if (capture())
    throw Error(ErrorKind::internal, "begin_module_capture: a capture is under way already");
  capture() = new std::vector<KernelInfo>();
  captured_files().clear();
}

namespace {
/// Runs the pending completions of `kernels` (KernelInfo::complete). A completion reads the op
/// catalogue, which reads declared_kernels(), never this: no completion runs inside another.
void complete_all(std::vector<KernelInfo>& kernels) {
  static std::recursive_mutex mutex;
  static bool completing = false;
  std::lock_guard<std::recursive_mutex> lock(mutex);
  if (completing) return;
  completing = true;
  struct Done {
    ~Done() { completing = false; }
  } done;
  for (auto& k : kernels) {
    if (!k.complete) continue;
    const auto complete = k.complete;
    try {
      complete(k);
    } catch (const Error& e) {
      throw Error(e.kind(), "kernel '" + k.name + "' (" + k.source + "): " + e.what());
    }
    k.complete = nullptr;
  }
}
}  // namespace

std::vector<KernelInfo> end_module_capture() {
  std::unique_ptr<std::vector<KernelInfo>> kernels(capture());
  capture() = nullptr;
  if (!kernels) return {};
  complete_all(*kernels);
  return std::move(*kernels);
}

bool embed_op_file(const char* path, const unsigned char* text, std::size_t size) {
  if (capture()) {  // a base module's op file: the head's definitions judge both sides; kept apart
    captured_files()[path] = std::string(reinterpret_cast<const char*>(text), size);
    return true;
  }
  embedded()[path] = std::string(reinterpret_cast<const char*>(text), size);
  return true;
}

std::map<std::string, std::string> captured_op_files() { return captured_files(); }

const std::string* embedded_op_file(const std::string& path) {
  const auto it = embedded().find(path);
  return it == embedded().end() ? nullptr : &it->second;
}

const char* backend_name(Backend backend) { return backend == Backend::cuda ? "cuda" : "cpu"; }

Backend parse_backend(const std::string& name) {
  if (name == "cuda") return Backend::cuda;
  if (name == "cpu") return Backend::cpu;
  throw_usage("unknown backend '" + name + "': expected cuda or cpu");
}

bool register_kernel(KernelInfo info) {
  if (capture()) {
    capture()->push_back(std::move(info));
    return true;
  }
  auto& kernels = registry();
  for (const auto& k : kernels)
    if (k.name == info.name)
      throw Error(ErrorKind::internal, "kernel '" + info.name + "' is registered twice (" +
                                           k.source + " and " + info.source +
                                           "): kernel names must be unique");
  kernels.push_back(std::move(info));
  std::sort(kernels.begin(), kernels.end(),
            [](const KernelInfo& a, const KernelInfo& b) { return a.name < b.name; });
  return true;
}

const std::vector<KernelInfo>& registered_kernels() {
  complete_all(registry());
  return registry();
}

const std::vector<KernelInfo>& declared_kernels() { return registry(); }

const KernelInfo& find_kernel(const std::string& name) {
  for (const auto& k : registered_kernels())
    if (k.name == name) return k;
  // The closest name first (a typo), then the kernels that are not mutants.
  std::vector<std::string> names;
  std::string known;
  for (const auto& k : registry()) {
    names.push_back(k.name);
    if (!k.mutant) known += (known.empty() ? "" : ", ") + k.name;
  }
  const std::string guess = closest(name, names);
  const std::string hint = guess.empty() ? "" : "did you mean '" + guess + "'? ";
  throw_usage("unknown kernel '" + name + "'; " + hint +
              "kernels: " + (known.empty() ? "(none)" : known) +
              " (`kgate list --all` shows them with the mutants)");
}

}  // namespace kgate
