// A run's backend, kernels and shard (targets.hpp).
#include "plan/targets.hpp"

#include <algorithm>
#include <sstream>

#include "core/error.hpp"

namespace kgate::plan {

const char* verb_gerund(Verb verb) {
  switch (verb) {
    case Verb::check:
      return "checking";
    case Verb::sweep:
      return "sweeping";
    case Verb::calibrate:
      return "calibrating";
  }
  return "running";
}

bool DeviceProbe::present() {
  if (!present_) present_ = ask_ && ask_(&why_);
  return *present_;
}

const std::string& DeviceProbe::why() { return why_; }

BackendChoice choose_backend(const RunRequest& request, DeviceProbe& device) {
  BackendChoice choice;
  if (request.packages.empty() && request.backend.empty()) {
    choice.backend = device.present() ? Backend::cuda : Backend::cpu;
    if (choice.backend == Backend::cpu)
      choice.notice =
          "kgate: " + device.why() + " — " + verb_gerund(request.verb) +
          " the cpu backend's kernels instead" +
          (request.verb == Verb::check ? " (pass --backend cuda to require a GPU)" : "") + "\n";
    return choice;
  }
  choice.backend = request.packages.empty() ? parse_backend(request.backend) : Backend::cuda;
  if (choice.backend == Backend::cpu || device.present()) return choice;
  // A GPU is needed and there is none. kgate check says so of its packages in their own words.
  const bool check_packages = request.verb == Verb::check && !request.packages.empty();
  if (request.no_device_exit_code) {
    choice.skip_exit_code = request.no_device_exit_code;
    choice.skip_line =
        "SKIPPED: " + device.why() +
        (check_packages ? " (the packages are valid and compile; running them needs a GPU)" : "") +
        "\n";
    return choice;
  }
  if (check_packages)
    throw Error(ErrorKind::usage,
                device.why() +
                    ": checking a package runs it on a GPU; `kgate validate PKG` checks a "
                    "package (manifest and NVRTC compile) without one");
  throw Error(ErrorKind::usage, device.why() +
                                    " (--backend cuda needs a GPU; use --backend cpu "
                                    "on machines without one)");
}

void refuse_packages_on_cpu(const RunRequest& request) {
  if (request.packages.empty() || request.backend != "cpu") return;
  const std::string verb = request.verb == Verb::sweep ? "sweep" : "check";
  throw_usage("packages run on the cuda backend: drop --backend cpu (or " + verb +
              " in-tree cpu kernels with --kernel)");
}

std::vector<const KernelInfo*> select_kernels(const std::vector<std::string>& names,
                                              Backend backend) {
  std::vector<const KernelInfo*> selected;
  if (names.empty()) {
    for (const auto& k : registered_kernels())
      if (k.backend == backend && !k.mutant) selected.push_back(&k);
    return selected;
  }
  for (const auto& name : names) {
    const auto& k = find_kernel(name);
    if (k.backend != backend)
      throw_usage("kernel '" + name + "' runs on the " + backend_name(k.backend) +
                  " backend, not " + backend_name(backend) + " (pass --backend " +
                  backend_name(k.backend) + ")");
    selected.push_back(&k);
  }
  return selected;
}

Shard parse_shard(const std::string& text) {
  Shard s;
  char slash = 0, rest = 0;
  std::istringstream in(text);
  if (!(in >> s.index >> slash >> s.count) || slash != '/' || (in >> rest) || s.count < 1 ||
      s.index < 1 || s.index > s.count)
    throw_usage("--shard '" + text + "': expected i/n with 1 <= i <= n (e.g. --shard 2/4)");
  return s;
}

std::vector<std::string> shard_names(std::vector<std::string> names, const Shard& s) {
  std::sort(names.begin(), names.end());
  std::vector<std::string> mine;
  for (size_t i = 0; i < names.size(); ++i)
    if (static_cast<int>(i % static_cast<size_t>(s.count)) == s.index - 1) mine.push_back(names[i]);
  return mine;
}

}  // namespace kgate::plan
