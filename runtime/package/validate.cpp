// validate_package: manifest check, then NVRTC compile, problems collected.
#include "runtime/package/validate.hpp"

#include <cstdio>

#include "runtime/package/kernel_types.hpp"

namespace kgate::package {

namespace {

// The declared parameter types of the extern "C" kernels, whose names carry none: a second compile
// of the sources instantiates kgate_param_probe<decltype(&KERNEL)> (the prelude declares it) for
// each, whose mangled name carries the kernel's function type. Cached as any compile. A probe that
// does not compile leaves the kernel to the size check; so does a package of several translation
// units or of precompiled binaries.
std::map<std::string, std::vector<ParamType>> extern_c_param_types(const PackageManifest& m,
                                                                   const CompileOptions& options,
                                                                   const CompileResult& r) {
  std::map<std::string, std::vector<ParamType>> out;
  if (!r.precompiled.empty() || r.units.size() > 1) return out;
  PackageManifest probe = m;
  probe.launches.clear();
  for (const auto& expr : m.name_expressions()) {
    const auto low = r.lowered_names.find(expr);
    if (low == r.lowered_names.end() || low->second.rfind("_Z", 0) == 0)
      continue;  // mangled: typed already
    Launch l;
    l.kernel = param_probe_expression(expr);
    l.field = expr;
    probe.launches.push_back(std::move(l));
  }
  if (probe.launches.empty()) return out;
  CompileResult result;
  ManifestProblem ignored;
  if (!try_compile_package(probe, options, result, ignored)) return out;
  for (const auto& l : probe.launches)
    if (const auto low = result.lowered_names.find(l.kernel); low != result.lowered_names.end())
      if (auto types = probe_param_types(low->second)) out[l.field] = std::move(*types);
  return out;
}

}  // namespace

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
      for (auto& p :
           args_match_types(report.manifest, *op, result,
                            extern_c_param_types(report.manifest, options.compile_options, result)))
        report.problems.push_back(std::move(p));
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
      return out + "; precompiled " + (c.precompiled == "ptx" ? "PTX" : c.precompiled) + " " +
             c.precompiled_path + " for " + arch +
             (c.precompiled == "ptx" ? " (the driver compiles it when it is loaded)" : "") + " (" +
             ms + " s)";
    }
    const std::string cubins =
        c.units.size() > 1 ? std::to_string(c.units.size()) + " CUBINs" : "CUBIN";
    out += c.cache_hit
               ? "; cached " + cubins + " for " + arch + " (" + seconds + " s)"
               : "; compiled for " + arch + " in " + seconds + " s (" +
                     (c.units.size() > 1 ? std::to_string(c.units.size()) + " translation units, "
                                         : "") +
                     "sandbox: " + sandbox_kind_name(c.sandbox) + ")";
  }
  return out;
}

}  // namespace kgate::package
