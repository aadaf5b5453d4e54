// The process-wide list of kernels under test.
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "core/embedded_op_files.hpp"
#include "core/error.hpp"
#include "core/suggest.hpp"
#include "runtime/kernel.hpp"

namespace kgate {
namespace {
std::vector<KernelInfo>& registry() {
  static std::vector<KernelInfo> kernels;
  return kernels;
}
// A base module's registrations while it loads (begin_module_capture): null when not capturing.
std::vector<KernelInfo>*& capture() {
  static std::vector<KernelInfo>* kernels = nullptr;
  return kernels;
}
}  // namespace

void begin_module_capture() {
  if (capture())
    throw Error(ErrorKind::internal, "begin_module_capture: a capture is under way already");
  capture() = new std::vector<KernelInfo>();
  begin_op_file_capture();
}

namespace {
/// Runs the pending completions of `kernels` (KernelInfo::complete), one thread at a time. A
/// completion reads the op catalogue, which reads the op files declared here
/// (core/embedded_op_files.hpp), never the registry: no completion runs inside another.
void complete_all(std::vector<KernelInfo>& kernels) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
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
  end_op_file_capture();
  if (!kernels) return {};
  complete_all(*kernels);
  return std::move(*kernels);
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
  if (!info.op_file.empty()) declare_kernel_op_file(info.name, info.op_file);
  kernels.push_back(std::move(info));
  std::sort(kernels.begin(), kernels.end(),
            [](const KernelInfo& a, const KernelInfo& b) { return a.name < b.name; });
  return true;
}

const std::vector<KernelInfo>& registered_kernels() {
  complete_all(registry());
  return registry();
}

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
