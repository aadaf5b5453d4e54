// What check, calibrate and sweep share about what a run covers: packages loaded and named apart,
// the GPU's architecture, --devices, and a package's cases inside and across its guard.
#include "cli/commands.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "gates/correctness/rules.hpp"
#include "gates/props/generators.hpp"
#include "references/catalogue.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/package/package_kernel.hpp"
#include "runtime/package/validate.hpp"

namespace kgate::cli {

namespace fs = std::filesystem;

package::ValidateOptions validate_options(const std::string& arch) {
  package::ValidateOptions options;
  options.compile_options.arch = arch;
  options.check.find_op = [](const std::string& name) { return lookup_op(name); };
  options.check.load_op_file = [](const std::string& path) { load_op_files(path); };
  for (const auto& op : op_catalogue()) options.check.known_ops.push_back(op.name);
  return options;
}

std::optional<int> announce(const plan::BackendChoice& choice) {
  if (!choice.notice.empty()) std::fputs(choice.notice.c_str(), stderr);
  if (!choice.skip_exit_code) return std::nullopt;
  std::fputs(choice.skip_line.c_str(), stdout);
  return choice.skip_exit_code;
}

std::string device_arch() {
  const auto info = cuda::device_info();
  return "sm_" + std::to_string(info.sm_major) + std::to_string(info.sm_minor);
}

std::optional<LoadedPackage> load_package(const std::string& dir, const std::string& arch,
                                          bool quiet) {
  const auto report = package::validate_package(dir, validate_options(arch));
  if (!report.ok()) {
    std::fprintf(stderr, "%s", package::format_problems(report.problems).c_str());
    std::fprintf(stderr, "kgate: %zu problem(s) in %s\n", report.problems.size(), dir.c_str());
    return std::nullopt;
  }
  if (!quiet)
    std::fprintf(stderr, "package %s: %s\n", dir.c_str(), package::format_summary(report).c_str());
  LoadedPackage p;
  p.manifest = report.manifest;
  p.op = &find_op(report.manifest.op);
  p.kernel = package::make_package_kernel(report.manifest, *report.compiled, *p.op);
  return p;
}

std::optional<std::vector<LoadedPackage>> load_packages(const std::vector<std::string>& dirs,
                                                        const std::string& arch, bool have_device,
                                                        bool quiet) {
  const std::string target = !arch.empty() ? arch : have_device ? device_arch() : "sm_90";
  std::vector<LoadedPackage> packages;
  for (const auto& dir : dirs) {
    auto p = load_package(dir, target, quiet);
    if (!p) return std::nullopt;
    packages.push_back(std::move(*p));
  }
  check_unique_package_names(dirs, packages);
  return packages;
}

std::map<std::string, std::string> package_tree(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw_usage("--baseline-packages " + dir + " is not a directory");
  std::map<std::string, std::string> out;
  for (auto it =
           fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().filename() != "kgate.json" || !it->is_regular_file(ec)) continue;
    std::ifstream in(it->path());
    const auto manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!manifest.is_object() || !manifest.contains("name") || !manifest["name"].is_string())
      continue;
    const std::string name = manifest["name"].get<std::string>();
    const std::string package = it->path().parent_path().string();
    auto [at, fresh] = out.emplace(name, package);
    if (!fresh)
      throw_usage("--baseline-packages " + dir + ": two packages are named \"" + name + "\" (" +
                  at->second + " and " + package +
                  "): each package is paired with its namesake, so names must be unique");
  }
  return out;
}

void check_unique_package_names(const std::vector<std::string>& dirs,
                                const std::vector<LoadedPackage>& packages) {
  std::map<std::string, std::string> seen;  // name -> directory
  for (std::size_t i = 0; i < packages.size() && i < dirs.size(); ++i) {
    const std::string& name = packages[i].manifest.name;
    auto [it, fresh] = seen.emplace(name, dirs[i]);
    if (!fresh)
      throw_usage("two packages are named \"" + name + "\": " + it->second + " and " + dirs[i] +
                  ". A run names each kernel by its package's name (workers, reports, shards), so "
                  "each package needs a name of its own: change \"name\" in one kgate.json");
  }
}

std::vector<int> parse_devices(const std::string& text, int count, const char* visible) {
  std::vector<int> out;
  if (text == "all") {
    if (count <= 0)
      throw_usage(
          "--devices all: this process sees no CUDA device" +
          std::string(visible ? " (CUDA_VISIBLE_DEVICES=" + std::string(visible) + ")" : ""));
    for (int d = 0; d < count; ++d) out.push_back(d);
    return out;
  }
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    int d = -1;
    try {
      d = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || d < 0)
      throw_usage("--devices " + text + ": '" + item +
                  "' is not a device ordinal; expected 'all' or ordinals such as 0,1");
    if (std::find(out.begin(), out.end(), d) != out.end())
      throw_usage("--devices " + text + ": device " + item + " is listed twice");
    if (count > 0 && d >= count)
      throw_usage(
          "--devices " + text + ": this process sees " + std::to_string(count) + " device(s)" +
          (visible ? " (CUDA_VISIBLE_DEVICES=" + std::string(visible) + ")" : std::string()) +
          "; ordinals are numbered from 0");
    if (visible) cuda::visible_devices_for(d, visible);  // inside CUDA_VISIBLE_DEVICES (throws)
    out.push_back(d);
  }
  if (out.empty()) throw_usage("--devices: expected 'all' or ordinals such as 0,1");
  return out;
}

CheckOptions listing_options(uint64_t seed, int64_t cases, const std::vector<std::string>& families,
                             const std::string& config_path) {
  CheckOptions o;
  o.seed = seed;
  o.cases = cases;
  o.cli.cases = cases;
  o.families = families;
  if (!families.empty()) o.cli.families = families;
  if (!config_path.empty()) o.config = load_config(config_path, correctness::rule_names());
  return o;
}

CheckOptions package_options(const CheckOptions& base, const LoadedPackage& p) {
  CheckOptions o = base;
  // The guard's boundary cases come with the kernel (KernelInfo::guard_cases); calls drawn as
  // usual and moved inside the guard, and the captured variants, are added here.
  constexpr int64_t kMaxElements = package::kMaxGuardCaseElements;
  props::GeneratorOptions gen;
  gen.seed = derive_seed(base.seed, "inside/" + p.manifest.name, 0);
  gen.cases = std::max<int64_t>(1, base.cases / 2);
  gen.families = base.families;
  gen.max_elements = kMaxElements;
  std::set<std::string> seen;
  if (p.kernel.guard_cases)
    for (const auto& c : p.kernel.guard_cases(base.seed)) seen.insert(c.id());
  for (const auto& c : props::generate_cases(*p.op, traits_of(p.kernel), gen)) {
    if (c.family == "layout") continue;  // layouts outside the guard are what that family is for
    auto inside = package::move_inside_guard(p.manifest, *p.op, c);
    if (!inside || inside->numel_hint() > kMaxElements || !seen.insert(inside->id()).second)
      continue;
    inside->family = c.family;
    o.extra_cases.push_back(std::move(*inside));
  }
  const auto variants = package::variant_cases(p.manifest, *p.op, base.seed);
  for (const auto& v : variants) {
    if (v.kcase.numel_hint() <= kMaxElements) o.extra_cases.push_back(v.kcase);
    o.timed_cases.push_back({v.kcase, v.calls});
  }
  if (variants.empty())
    for (const auto& c : speed_cases(*p.op, p.kernel, base.seed, base.speed_cases))
      if (auto inside = package::move_inside_guard(p.manifest, *p.op, c))
        o.timed_cases.push_back({*inside, 0});
  for (const auto& f : p.manifest.captured_inputs)
    o.captured.push_back({f, (p.manifest.dir / f).string()});
  return o;
}

}  // namespace kgate::cli
