// validate_package: manifest check, then NVRTC compile, problems collected.
#include "runtime/package/validate.hpp"

#include <cstdio>

#include "runtime/package/kernel_types.hpp"

namespace kgate::package {

ValidationReport validate_package(const std::filesystem::path& dir,
                                  const ValidateOptions& options) {
  ValidationReport report;
  report.problems = check_manifest(dir, options.check, &report.manifest);
  report.manifest_path = report.manifest.manifest_path;
  if (!report.problems.empty() || !options.compile) return report;
  CompileResult result;
  ManifestProblem problem;
  if (!try_compile_package(report.manifest, options.compile_options, result, problem)) {
    report.problems.push_back(std::move(problem));
    return report;
  }
  // Sizes matched; the types, where the kernels' mangled names give them.
  if (options.check.find_op)
    if (const OpSignature* op = options.check.find_op(report.manifest.op))
      for (auto& p : args_match_types(report.manifest, *op, result)) report.problems.push_back(std::move(p));
  report.compiled = std::move(result);
  return report;
}

std::string format_summary(const ValidationReport& report) {
  const PackageManifest& m = report.manifest;
  const std::size_t launches = m.launches.size();
  const std::size_t kernels = m.name_expressions().size();
  std::string out = m.name + " " + m.version + " (op " + m.op + "): " + std::to_string(launches) +
                    (launches == 1 ? " launch, " : " launches, ") + std::to_string(kernels) +
                    (kernels == 1 ? " kernel" : " kernels");
  if (report.compiled) {
    const CompileResult& c = *report.compiled;
    const std::string arch =
        c.options.empty() ? ""
                          : c.options.front().substr(std::string("--gpu-architecture=").size());
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.2f",
                  c.cache_hit ? c.total_seconds : c.compile_seconds);
    if (!c.precompiled.empty()) {
      char ms[32];
      std::snprintf(ms, sizeof ms, "%.2f", c.total_seconds);
      return out + "; precompiled " + (c.precompiled == "ptx" ? "PTX" : c.precompiled) + " " + c.precompiled_path +
             " for " + arch + (c.precompiled == "ptx" ? " (the driver compiles it when it is loaded)" : "") + " (" + ms +
             " s)";
    }
    const std::string cubins = c.units.size() > 1 ? std::to_string(c.units.size()) + " CUBINs" : "CUBIN";
    out += c.cache_hit ? "; cached " + cubins + " for " + arch + " (" + seconds + " s)"
                       : "; compiled for " + arch + " in " + seconds + " s (" +
                             (c.units.size() > 1 ? std::to_string(c.units.size()) + " translation units, " : "") +
                             "sandbox: " + sandbox_kind_name(c.sandbox) + ")";
  }
  return out;
}

}  // namespace kgate::package
