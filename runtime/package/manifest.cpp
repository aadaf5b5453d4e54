// Reading and checking kgate.json (format "kgate-package/1"): the document stage (read, parse,
// JSON Schema), then the decoded source checked in passes (manifest_check.hpp). Every problem is
// recorded instead of stopping at the first, so that one `kgate validate` run shows everything a
// package author has to fix.
#include "runtime/package/manifest.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <regex>
#include <set>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/captured.hpp"
#include "core/cuda_limits.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/safe_text.hpp"
#include "core/schema_check.hpp"
#include "core/strict_json.hpp"
#include "core/suggest.hpp"
#include "runtime/package/device_props.hpp"
#include "runtime/package/manifest_check.hpp"
#include "runtime/package/package_files.hpp"

namespace kgate::package {

namespace fs = std::filesystem;
using nlohmann::json;

const char* scalar_type_name(ScalarType type) {
  switch (type) {
    case ScalarType::i32:
      return "i32";
    case ScalarType::i64:
      return "i64";
    case ScalarType::u32:
      return "u32";
    case ScalarType::u64:
      return "u64";
    case ScalarType::f32:
      return "f32";
    case ScalarType::f64:
      return "f64";
  }
  return "?";
}

std::size_t scalar_type_size(ScalarType type) {
  return type == ScalarType::i32 || type == ScalarType::u32 || type == ScalarType::f32 ? 4 : 8;
}

bool is_integer(ScalarType type) { return type != ScalarType::f32 && type != ScalarType::f64; }

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::contiguous:
      return "contiguous";
    case Layout::strided:
      return "strided";
    case Layout::offset:
      return "offset";
  }
  return "?";
}

const std::vector<std::string>& builtin_symbol_names() {
  static const std::vector<std::string> names = {kDtypeSizeSymbol};
  return names;
}

std::vector<std::string> tensor_symbol_names(const OpSignature& op) {
  std::vector<std::string> out;
  auto add = [&](const TensorSpec& t) {
    out.push_back("numel_" + t.name);
    out.push_back("align_" + t.name);
    for (std::size_t d = 0; d < t.shape.size(); ++d)
      out.push_back("stride_" + t.name + "_" + std::to_string(d));
  };
  for (const auto& t : op.inputs) add(t);
  for (const auto& t : op.outputs) add(t);
  return out;
}

bool is_tensor_symbol_form(const std::string& name) {
  auto has_prefix = [&](const char* p) {
    return name.rfind(p, 0) == 0 && name.size() > std::strlen(p);
  };
  if (has_prefix("numel_") || has_prefix("align_")) return true;
  if (!has_prefix("stride_")) return false;
  const auto last = name.rfind('_');
  return last > 7 && last + 1 < name.size() &&
         name.find_first_not_of("0123456789", last + 1) == std::string::npos;
}

std::string Launch::kernel_name(DType dtype) const {
  if (!kernel.empty()) return kernel;
  auto it = kernel_for_dtype.find(dtype);
  return it == kernel_for_dtype.end() ? std::string() : it->second;
}

bool manifest_reads_device(const PackageManifest& m) {
  const auto any = [](const std::vector<Expr>& v) {
    return std::any_of(v.begin(), v.end(), [](const Expr& e) { return reads_device(e); });
  };
  for (const auto& w : m.workspace)
    if (any(w.shape)) return true;
  for (const auto& l : m.launches) {
    if (any(l.grid) || any(l.block) || any(l.cluster) || reads_device(l.shared_mem)) return true;
    if ((l.when.if_expr && reads_device(*l.when.if_expr)) ||
        (l.max_dynamic_shared_mem && reads_device(*l.max_dynamic_shared_mem)))
      return true;
    for (const auto& a : l.args)
      if ((a.kind == KernelArg::Kind::shape && reads_device(a.value)) ||
          (a.float_expr && reads_device(*a.float_expr)))
        return true;
  }
  return false;
}

bool launch_runs(const Launch& launch, const SymbolValues& values, Layout layout) {
  const auto& layouts = launch.when.layouts;
  if (!layouts.empty() && std::find(layouts.begin(), layouts.end(), layout) == layouts.end())
    return false;
  return !launch.when.if_expr || launch.when.if_expr->evaluate(values) != 0;
}

std::vector<CompileUnit> compile_units(const PackageManifest& m) {
  bool extra = !m.nvrtc_options_for_dtype.empty();
  for (const auto& l : m.launches) extra = extra || !l.nvrtc_options.empty();
  if (!extra) {  // one translation unit, as a package without per-dtype or per-launch options has
                 // always had
    CompileUnit u;
    u.name_expressions = m.name_expressions();
    for (DType d : m.guard.dtypes)
      for (std::size_t i = 0; i < m.launches.size(); ++i) u.launches.emplace_back(d, i);
    return {u};
  }
  std::vector<CompileUnit> units;
  for (DType d : m.guard.dtypes) {
    for (std::size_t i = 0; i < m.launches.size(); ++i) {
      std::vector<std::string> options;
      if (auto it = m.nvrtc_options_for_dtype.find(d); it != m.nvrtc_options_for_dtype.end())
        options = it->second;
      options.insert(options.end(), m.launches[i].nvrtc_options.begin(),
                     m.launches[i].nvrtc_options.end());
      auto u = std::find_if(units.begin(), units.end(),
                            [&](const CompileUnit& c) { return c.options == options; });
      if (u == units.end()) {
        units.push_back({options, {}, {}});
        u = units.end() - 1;
      }
      const std::string name = m.launches[i].kernel_name(d);
      if (!name.empty() && std::find(u->name_expressions.begin(), u->name_expressions.end(),
                                     name) == u->name_expressions.end())
        u->name_expressions.push_back(name);
      u->launches.emplace_back(d, i);
    }
  }
  for (auto& u : units) std::sort(u.name_expressions.begin(), u.name_expressions.end());
  return units;
}

std::vector<std::string> PackageManifest::name_expressions() const {
  std::vector<std::size_t> all(launches.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  return name_expressions(all);
}

std::vector<std::string> PackageManifest::name_expressions(
    const std::vector<std::size_t>& of) const {
  std::set<std::string> names;
  for (std::size_t i : of) {
    const Launch& l = launches.at(i);
    if (!l.kernel.empty()) names.insert(l.kernel);
    for (const auto& entry : l.kernel_for_dtype) names.insert(entry.second);
  }
  return {names.begin(), names.end()};
}

const Attribute* PackageManifest::attribute(const std::string& attribute_name) const {
  for (const auto& a : attributes)
    if (a.name == attribute_name) return &a;
  return nullptr;
}

std::string format_problem(const ManifestProblem& problem) {
  // Fields hold the manifest's own keys, messages quote its values and compiler logs: all of it is
  // made safe for a terminal or a CI log here, where every problem passes.
  return safe_log_text(
      problem.file + ": " + inline_untrusted(problem.field, 300) + ": " + problem.message,
      96 * 1024);
}

std::string format_problems(const std::vector<ManifestProblem>& problems) {
  std::string out;
  for (const auto& p : problems) out += format_problem(p) + "\n";
  return out;
}

std::string nvrtc_option_problem(const std::string& o) {
  static const std::set<std::string> exact = {"-use_fast_math",
                                              "--use_fast_math",
                                              "-lineinfo",
                                              "--generate-line-info",
                                              "-extra-device-vectorization",
                                              "--extra-device-vectorization",
                                              "-default-device",
                                              "--device-as-default-execution-space"};
  static const std::regex std_re("--?std=c\\+\\+(11|14|17|20)");
  static const std::regex bool_re("--?(fmad|ftz|prec-div|prec-sqrt)=(true|false)");
  static const std::regex reg_re("--?maxrregcount=([0-9]{1,3})");
  // NVRTC's optimisation switches, as NVRTC 13 takes them (-dopt alone, --dopt=off and
  // -Ofast-compile are NVRTC_ERROR_INVALID_OPTION): device-code optimisation, fast-compile levels.
  static const std::regex opt_re("--?dopt=on|--Ofast-compile=(0|min|mid|max)");
  // A macro's value may be any printable text: each option reaches NVRTC as one argument, never a
  // shell, and what the value could reach through an #include the compile sandbox stops.
  static const std::regex define_re("-D[A-Za-z_][A-Za-z0-9_]{0,63}(=[\x20-\x7e]{0,192})?");
  // std::regex recurses per character: a 40 KB option (or version) overflowed the stack.
  if (o.size() > 256)
    return quote_untrusted(o, 60) + " is not an allowed NVRTC option (longer than 256 characters)";
  if (exact.count(o) || std::regex_match(o, std_re) || std::regex_match(o, bool_re) ||
      std::regex_match(o, opt_re))
    return {};
  std::smatch m;
  if (std::regex_match(o, m, reg_re)) {
    const int n = std::stoi(m[1].str());
    if (n >= 16 && n <= 255) return {};
    return quote_untrusted(o) + " is out of range; expected -maxrregcount=N with 16 <= N <= 255";
  }
  if (std::regex_match(o, define_re)) return {};
  if (o.rfind("-D", 0) == 0 || o.rfind("--define-macro", 0) == 0)
    return quote_untrusted(o) +
           " is not an allowed macro definition; expected -DNAME or -DNAME=VALUE (NAME an "
           "identifier, VALUE printable ASCII text of at most 192 characters)";
  if (o.rfind("-arch", 0) == 0 || o.rfind("--gpu-architecture", 0) == 0 || o.rfind("-gpu", 0) == 0)
    return quote_untrusted(o) +
           " is not allowed: kgate sets the GPU architecture for the device (or `kgate validate "
           "--arch`); remove it";
  if (o.rfind("-I", 0) == 0 || o.rfind("--include-path", 0) == 0 || o.rfind("-include", 0) == 0 ||
      o.rfind("--pre-include", 0) == 0)
    return quote_untrusted(o) +
           " is not allowed: list include directories in \"include_dirs\" instead";
  return quote_untrusted(o) +
         " is not an allowed NVRTC option; expected one of -std=c++11|14|17|20, --use_fast_math, "
         "-DNAME[=VALUE], -lineinfo, --fmad=true|false, --ftz=true|false, "
         "--prec-div=true|false, --prec-sqrt=true|false, -maxrregcount=N, "
         "--extra-device-vectorization, -default-device, -dopt=on, --Ofast-compile=0|min|mid|max";
}

namespace {

/// The document stage: kgate.json read (or taken from the options), parsed strictly and checked
/// against the JSON Schema; then decoded once (manifest_decode.cpp) and checked in passes
/// (manifest_check.hpp), in the order below; then the problems of all, in the manifest's order.
class ManifestCheck {
 public:
  ManifestCheck(const fs::path& package_dir, const ManifestCheckOptions& options,
                PackageManifest& m)
      : package_dir_(package_dir), st_(options, m, (package_dir / kManifestFileName).string()) {
    m.manifest_path = package_dir / kManifestFileName;
  }

  std::vector<ManifestProblem> run() {
    if (!find_directory()) return finish();
    json doc;
    if (!read_document(doc)) return finish();
    // The structure first (types, required and unknown keys, enums, ranges: the JSON Schema), then
    // what a schema cannot say, over the decoded source, which leaves out what the schema refused.
    schema_problems_ = SchemaCheck::package_manifest().problems(doc);
    if (st_.files_unread()) allow_include_dirs_outside(doc);
    if (!doc.is_object()) return finish();
    const check::ManifestSource s = source::decode_manifest(doc);
    using namespace check;
    // What the package is: its op, attributes and build inputs.
    check_op(s, st_);
    check_attributes(s, st_);
    check_sources(s, st_);
    check_include_dirs(s, st_);
    check_nvrtc_options(s, st_);
    // The names its launches use: dtypes, symbols, workspaces, outputs' start values.
    check_guard_dtypes(s, st_);
    check_dtype_options(s, st_);
    check_symbols(s, st_);
    check_ranks_against_op(st_);
    declare_expression_names(st_);
    check_workspace(s, st_);
    check_output_starts(s, st_);
    // The launches and the guard, then what holds across them.
    check_launches(s, st_);
    check_launch_binaries(s, st_);
    check_guard(s, st_);
    check_captured_inputs(s, st_);
    check_when_layouts(st_);
    check_outputs_bound(s, st_);
    check_launches_at_largest_call(s, st_);
    st_.m.reads_device = manifest_reads_device(st_.m);
    return finish();
  }

 private:
  void problem(const std::string& field, const std::string& message) {
    st_.problem(field, message);
  }

  bool find_directory() {
    std::error_code ec;
    if (st_.files_unread()) {
      st_.m.dir = package_dir_;
      return true;
    }
    if (!fs::is_directory(package_dir_, ec)) {
      problem("(package)", "the package directory " + quote_untrusted(package_dir_.string()) +
                               " does not exist or is not a directory");
      return false;
    }
    st_.m.dir = fs::canonical(package_dir_, ec);
    if (ec) {
      problem("(package)", "cannot resolve the package directory: " + ec.message());
      return false;
    }
    return true;
  }

  /// The problems, with one line for those past kMaxProblems.
  std::vector<ManifestProblem> finish() {
    auto& problems = st_.problems;
    // Where both say something of one field, the check below says more (which part of a path
    // leaves the package, which tensor the op lacks).
    std::vector<ManifestProblem> structural;
    for (const auto& s : unspoken(schema_problems_, problems))
      structural.push_back({st_.file, s.field, s.message});
    problems.insert(problems.begin(), structural.begin(), structural.end());
    // In the manifest's own order of keys (a key it does not know last), whoever found them.
    static const std::vector<std::string> kOrder = {"(package)",      "(document)",
                                                    "format",         "name",
                                                    "version",        "op",
                                                    "op_file",        "description",
                                                    "attributes",     "sources",
                                                    "binaries",       "include_dirs",
                                                    "nvrtc_options",  "nvrtc_options_for_dtype",
                                                    "symbols",        "workspace",
                                                    "outputs",        "launch_defaults",
                                                    "launches",       "guard",
                                                    "captured_inputs"};
    const auto rank = [](const std::string& field) {
      const std::string top = field.substr(0, field.find_first_of(".["));
      const auto it = std::find(kOrder.begin(), kOrder.end(), top);
      return static_cast<std::size_t>(it - kOrder.begin());
    };
    std::stable_sort(problems.begin(), problems.end(),
                     [&](const ManifestProblem& a, const ManifestProblem& b) {
                       return rank(a.field) < rank(b.field);
                     });
    if (problems.size() > kMaxProblems) {
      st_.dropped_problems += problems.size() - kMaxProblems;
      problems.resize(kMaxProblems);
    }
    if (st_.dropped_problems)
      problems.push_back({st_.file, "(document)",
                          std::to_string(st_.dropped_problems) +
                              " more problems are not listed; fix "
                              "the ones above first"});
    return std::move(problems);
  }

  /// A package compiled into the build reads headers from the project's own tree: its
  /// include_dirs may climb out of the package ("../../common"), which the schema refuses.
  void allow_include_dirs_outside(const json& doc) {
    const auto dirs = doc.find("include_dirs");
    if (dirs == doc.end() || !dirs->is_array()) return;
    std::vector<SchemaProblem> kept;
    for (const auto& p : schema_problems_) {
      bool climbs_only = false;
      for (std::size_t i = 0; i < dirs->size() && !climbs_only; ++i) {
        const json& v = (*dirs)[i];
        if (p.field != source::at("include_dirs", i) || !v.is_string()) continue;
        const std::string rel = v.get<std::string>();
        climbs_only = !rel.empty() && rel[0] != '/' &&
                      std::none_of(rel.begin(), rel.end(),
                                   [](char c) { return static_cast<unsigned char>(c) < 0x20; });
      }
      if (!climbs_only) kept.push_back(p);
    }
    schema_problems_ = std::move(kept);
  }

  bool read_document(json& doc) {
    if (st_.files_unread()) return parse_document(*st_.options.manifest_text, doc);
    std::error_code ec;
    const fs::path& p = st_.m.manifest_path;
    const auto status = fs::symlink_status(p, ec);
    if (ec || !fs::exists(status)) {
      problem("(document)", "not found; a package directory must contain kgate.json");
      return false;
    }
    if (fs::is_symlink(status)) {
      problem("(document)", "kgate.json must be a regular file, not a symbolic link");
      return false;
    }
    if (!fs::is_regular_file(status)) {
      problem("(document)", "kgate.json must be a regular file");
      return false;
    }
    const auto size = fs::file_size(p, ec);
    if (!ec && size > kMaxManifestBytes) {
      problem("(document)", "the manifest has " + std::to_string(size) +
                                " bytes; expected at most " + std::to_string(kMaxManifestBytes));
      return false;
    }
    std::ifstream in(p, std::ios::binary);
    if (!in) {
      problem("(document)", "cannot be read");
      return false;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_document(ss.str(), doc);
  }

  bool parse_document(const std::string& text, json& doc) {
    if (text.size() > kMaxManifestBytes) {
      problem("(document)", "the manifest has " + std::to_string(text.size()) +
                                " bytes; expected at most " + std::to_string(kMaxManifestBytes));
      return false;
    }
    std::string duplicate;
    try {
      doc = parse_strict_json(text, &duplicate);  // core/strict_json.hpp
    } catch (const json::exception& e) {
      problem("(document)", "not valid JSON: " + json_error_text(e));
      return false;
    }
    if (!duplicate.empty()) {
      problem("(document)", "the key " + quote_untrusted(duplicate) +
                                " appears twice in one object; JSON readers disagree on which one "
                                "counts, so each key may appear once");
      return false;
    }
    return true;
  }

  fs::path package_dir_;
  check::CheckState st_;
  std::vector<SchemaProblem> schema_problems_;
};

}  // namespace

std::vector<ManifestProblem> check_manifest(const fs::path& package_dir,
                                            const ManifestCheckOptions& options,
                                            PackageManifest* out) {
  PackageManifest local;
  PackageManifest& m = out ? *out : local;
  m = PackageManifest{};
  return ManifestCheck(package_dir, options, m).run();
}

PackageManifest load_manifest(const fs::path& package_dir, const ManifestCheckOptions& options) {
  PackageManifest m;
  const auto problems = check_manifest(package_dir, options, &m);
  if (!problems.empty()) {
    std::string text = format_problems(problems);
    text.pop_back();
    throw Error(ErrorKind::package, text);
  }
  return m;
}

fs::path resolve_in_package(const fs::path& dir, const std::string& relative) {
  std::error_code ec;
  const fs::path root = fs::canonical(dir, ec);
  if (ec)
    throw Error(ErrorKind::package,
                "package directory " + quote_untrusted(dir.string()) + ": " + ec.message());
  fs::path resolved;
  const std::string err = package_path_problem(root, relative, PathKind::any, &resolved);
  if (!err.empty())
    throw Error(ErrorKind::package, (dir / kManifestFileName).string() + ": " + err);
  return resolved;
}

}  // namespace kgate::package
