// Reading and checking kgate.json (format "kgate-package/1"). The checker walks the whole document
// and records every problem instead of stopping at the first, so that one `kgate validate` run
// shows everything a package author has to fix.
#include "runtime/package/manifest.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cmath>
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
#include "core/schema_check.hpp"
#include "core/suggest.hpp"
#include "core/safe_text.hpp"
#include "core/strict_json.hpp"
#include "runtime/package/device_props.hpp"
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
    for (std::size_t d = 0; d < t.shape.size(); ++d) out.push_back("stride_" + t.name + "_" + std::to_string(d));
  };
  for (const auto& t : op.inputs) add(t);
  for (const auto& t : op.outputs) add(t);
  return out;
}

bool is_tensor_symbol_form(const std::string& name) {
  auto has_prefix = [&](const char* p) { return name.rfind(p, 0) == 0 && name.size() > std::strlen(p); };
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
      if ((a.kind == KernelArg::Kind::shape && reads_device(a.value)) || (a.float_expr && reads_device(*a.float_expr)))
        return true;
  }
  return false;
}

bool launch_runs(const Launch& launch, const SymbolValues& values, Layout layout) {
  const auto& layouts = launch.when.layouts;
  if (!layouts.empty() && std::find(layouts.begin(), layouts.end(), layout) == layouts.end()) return false;
  return !launch.when.if_expr || launch.when.if_expr->evaluate(values) != 0;
}

std::vector<CompileUnit> compile_units(const PackageManifest& m) {
  bool extra = !m.nvrtc_options_for_dtype.empty();
  for (const auto& l : m.launches) extra = extra || !l.nvrtc_options.empty();
  if (!extra) {  // one translation unit, as a package without per-dtype or per-launch options has always had
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
      if (auto it = m.nvrtc_options_for_dtype.find(d); it != m.nvrtc_options_for_dtype.end()) options = it->second;
      options.insert(options.end(), m.launches[i].nvrtc_options.begin(), m.launches[i].nvrtc_options.end());
      auto u = std::find_if(units.begin(), units.end(), [&](const CompileUnit& c) { return c.options == options; });
      if (u == units.end()) {
        units.push_back({options, {}, {}});
        u = units.end() - 1;
      }
      const std::string name = m.launches[i].kernel_name(d);
      if (!name.empty() && std::find(u->name_expressions.begin(), u->name_expressions.end(), name) == u->name_expressions.end())
        u->name_expressions.push_back(name);
      u->launches.emplace_back(d, i);
    }
  }
  for (auto& u : units) std::sort(u.name_expressions.begin(), u.name_expressions.end());
  return units;
}

std::vector<std::string> PackageManifest::name_expressions() const {
  std::set<std::string> names;
  for (const auto& l : launches) {
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
  return safe_log_text(problem.file + ": " + inline_untrusted(problem.field, 300) + ": " +
                           problem.message,
                       96 * 1024);
}

std::string format_problems(const std::vector<ManifestProblem>& problems) {
  std::string out;
  for (const auto& p : problems) out += format_problem(p) + "\n";
  return out;
}

namespace {

const std::vector<std::string> kLaunchDefaultKeys = {"kernel", "grid", "block", "shared_mem", "args", "when",
                                                     "nvrtc_options", "max_dynamic_shared_mem", "carveout", "cluster"};
const std::vector<std::string> kArgKinds = {"tensor",    "workspace", "shape",
                                            "attribute", "scalar",    "stride"};
/// Most predicates of guard.require.
constexpr std::size_t kMaxRequire = 32;
/// Most launches listed (before "for_each" expands them).
constexpr std::size_t kMaxLaunches = 64;
/// Most launches once every "for_each" is expanded.
constexpr std::size_t kMaxExpandedLaunches = 64;
constexpr std::size_t kMaxOptions = 64;
constexpr int kMaxRank = 8;

/// A list in a message, at most 24 items (a manifest may declare thousands: each problem listing
/// them all made its messages grow with the square of its size).
std::string join_capped(const std::vector<std::string>& items) { return join(items, ", ", 24); }

bool is_builtin_symbol(const std::string& name) {
  const auto& names = builtin_symbol_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::optional<ScalarType> parse_scalar_type(const std::string& s) {
  if (s == "i32") return ScalarType::i32;
  if (s == "i64") return ScalarType::i64;
  if (s == "u32") return ScalarType::u32;
  if (s == "u64") return ScalarType::u64;
  if (s == "f32") return ScalarType::f32;
  if (s == "f64") return ScalarType::f64;
  return std::nullopt;
}

std::optional<Layout> parse_layout(const std::string& s) {
  if (s == "contiguous") return Layout::contiguous;
  if (s == "strided") return Layout::strided;
  if (s == "offset") return Layout::offset;
  return std::nullopt;
}

}  // namespace

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
  if (exact.count(o) || std::regex_match(o, std_re) || std::regex_match(o, bool_re) || std::regex_match(o, opt_re))
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
    return quote_untrusted(o) + " is not allowed: list include directories in \"include_dirs\" instead";
  return quote_untrusted(o) +
         " is not an allowed NVRTC option; expected one of -std=c++11|14|17|20, --use_fast_math, "
         "-DNAME[=VALUE], -lineinfo, --fmad=true|false, --ftz=true|false, "
         "--prec-div=true|false, --prec-sqrt=true|false, -maxrregcount=N, "
         "--extra-device-vectorization, -default-device, -dopt=on, --Ofast-compile=0|min|mid|max";
}

namespace {

/// Allowed characters of a kernel name expression: a C++ (template) name, nothing that ends the
/// expression NVRTC builds from it.
bool is_name_expression(const std::string& s) {
  static const std::regex re("[A-Za-z_:&(][A-Za-z0-9_:<>,.*&() -]{0,511}");
  return s.size() <= 512 && std::regex_match(s, re);
}

class Checker {
 public:
  Checker(const fs::path& package_dir, const ManifestCheckOptions& options, PackageManifest& m)
      : options_(options), m_(m) {
    m_.manifest_path = package_dir / kManifestFileName;
    file_ = m_.manifest_path.string();
    package_dir_ = package_dir;
  }

  std::vector<ManifestProblem> run() {
    std::error_code ec;
    if (files_unread()) {
      m_.dir = package_dir_;
    } else if (!fs::is_directory(package_dir_, ec)) {
      problem("(package)", "the package directory " + quote_untrusted(package_dir_.string()) +
                               " does not exist or is not a directory");
      return finish();
    } else {
      m_.dir = fs::canonical(package_dir_, ec);
      if (ec) {
        problem("(package)", "cannot resolve the package directory: " + ec.message());
        return finish();
      }
    }
    json doc;
    if (!read_document(doc)) return finish();
    // The structure first (types, required and unknown keys, enums, ranges: the JSON Schema), then
    // what a schema cannot say; the checks below skip what the schema refused.
    schema_problems_ = SchemaCheck::package_manifest().problems(doc);
    if (files_unread()) allow_include_dirs_outside(doc);
    if (!doc.is_object()) return finish();
    check_format(doc);
    check_name_version(doc);
    check_op(doc);
    m_.description = string_at(doc, "description").value_or("");
    check_attributes(doc);
    check_sources(doc);
    check_include_dirs(doc);
    check_nvrtc_options(doc);
    check_guard_dtypes(doc);
    check_dtype_options(doc);
    check_symbols(doc);
    check_ranks_against_op();
    declare_expression_names();
    check_workspace(doc);
    check_output_starts(doc);
    check_launches(doc);
    check_guard(doc);
    check_captured_inputs(doc);
    check_when_layouts();
    check_outputs_bound();
    check_launches_at_largest_call();
    m_.reads_device = manifest_reads_device(m_);
    return finish();
  }

 private:
  void problem(const std::string& field, const std::string& message) {
    if (problems_.size() < kMaxProblems)
      problems_.push_back({file_, field, message});
    else
      ++dropped_problems_;
  }

  /// The problems, with one line for those past kMaxProblems.
  std::vector<ManifestProblem> finish() {
    // Where both say something of one field, the check below says more (which part of a path
    // leaves the package, which tensor the op lacks).
    std::vector<ManifestProblem> structural;
    for (const auto& s : unspoken(schema_problems_, problems_)) structural.push_back({file_, s.field, s.message});
    problems_.insert(problems_.begin(), structural.begin(), structural.end());
    // In the manifest's own order of keys (a key it does not know last), whoever found them.
    static const std::vector<std::string> kOrder = {
        "(package)", "(document)", "format", "name", "version", "op", "op_file", "description", "attributes",
        "sources", "binaries", "include_dirs", "nvrtc_options", "nvrtc_options_for_dtype", "symbols", "workspace",
        "outputs", "launch_defaults", "launches", "guard", "captured_inputs"};
    const auto rank = [](const std::string& field) {
      const std::string top = field.substr(0, field.find_first_of(".["));
      const auto it = std::find(kOrder.begin(), kOrder.end(), top);
      return static_cast<std::size_t>(it - kOrder.begin());
    };
    std::stable_sort(problems_.begin(), problems_.end(),
                     [&](const ManifestProblem& a, const ManifestProblem& b) { return rank(a.field) < rank(b.field); });
    if (problems_.size() > kMaxProblems) {
      dropped_problems_ += problems_.size() - kMaxProblems;
      problems_.resize(kMaxProblems);
    }
    if (dropped_problems_)
      problems_.push_back({file_, "(document)",
                           std::to_string(dropped_problems_) + " more problems are not listed; fix "
                           "the ones above first"});
    return std::move(problems_);
  }

  static std::string sub(const std::string& field, const std::string& key) {
    return field.empty() ? key : field + "." + key;
  }
  static std::string at(const std::string& field, std::size_t i) {
    return field + "[" + std::to_string(i) + "]";
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
        if (p.field != at("include_dirs", i) || !v.is_string()) continue;
        const std::string rel = v.get<std::string>();
        climbs_only = !rel.empty() && rel[0] != '/' &&
                      std::none_of(rel.begin(), rel.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
      }
      if (!climbs_only) kept.push_back(p);
    }
    schema_problems_ = std::move(kept);
  }

  /// The manifest's bytes came with the options: the files it names are not opened.
  bool files_unread() const { return options_.manifest_text.has_value(); }

  bool read_document(json& doc) {
    if (files_unread()) return parse_document(*options_.manifest_text, doc);
    std::error_code ec;
    const fs::path& p = m_.manifest_path;
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

  /// The string at `key`, or nullopt when it is missing or not a string (the schema said which).
  static std::optional<std::string> string_at(const json& obj, const std::string& key) {
    auto it = obj.find(key);
    if (it == obj.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  }

  // format, name and version: their form is the schema's (const, patterns).
  void check_format(const json& doc) { m_.format = string_at(doc, "format").value_or(""); }

  void check_name_version(const json& doc) {
    m_.name = string_at(doc, "name").value_or("");
    m_.version = string_at(doc, "version").value_or("");
  }

  void check_op(const json& doc) {
    auto v = string_at(doc, "op");
    if (!v) return;
    m_.op = *v;
    if (!is_identifier(*v)) return;  // the schema said
    // An op no kgate builds in travels with the package as its op file (kgate-op/1), a file inside
    // the package directory like its sources.
    if (auto it = doc.find("op_file"); it != doc.end()) {
      fs::path resolved;
      const std::string err = !it->is_string()
                                  ? "expected the path of the op file (kgate-op/1) inside the package, found " + describe_json(*it)
                              : files_unread() ? std::string()
                                  : package_path_problem(m_.dir, it->get<std::string>(), PathKind::source, &resolved);
      if (!err.empty()) {
        problem("op_file", err);
      } else if (files_unread()) {
        m_.op_file = it->get<std::string>();  // (the build loads it: kgate_add_kernel embeds it)
      } else {
        m_.op_file = resolved.string();
        if (options_.load_op_file) {
          try {
            options_.load_op_file(m_.op_file);
          } catch (const std::exception& e) {
            problem("op_file", e.what());
            return;
          }
        }
      }
    }
    if (!options_.find_op) return;
    op_ = options_.find_op(*v);
    if (op_) return;
    std::string msg = "unknown op " + quote_untrusted(*v) + ";";
    const std::string guess = closest(*v, options_.known_ops);
    if (!guess.empty()) msg += " did you mean " + quote_untrusted(guess) + "?";
    msg += options_.known_ops.empty() ? " it is not in kgate's op catalogue"
                                      : " known ops: " + join_capped(options_.known_ops);
    problem("op", msg);
  }

  std::vector<std::string> op_tensor_names() const {
    std::vector<std::string> out;
    if (!op_) return out;
    for (const auto& t : op_->inputs) out.push_back(t.name);
    for (const auto& t : op_->outputs) out.push_back(t.name);
    return out;
  }

  /// Checks a tensor name against the op; returns false (with a problem) when it is not one.
  bool check_tensor_name(const std::string& field, const json& v) {
    if (!v.is_string() || !is_identifier(v.get<std::string>())) return false;  // the schema said
    const std::string name = v.get<std::string>();
    if (!op_) return true;
    const auto names = op_tensor_names();
    if (std::find(names.begin(), names.end(), name) != names.end()) return true;
    std::string msg = "op " + quote_untrusted(m_.op) + " has no tensor " + quote_untrusted(name) + ";";
    const std::string guess = closest(name, names);
    if (!guess.empty()) msg += " did you mean " + quote_untrusted(guess) + "?";
    problem(field, msg + " expected one of: " + join_capped(names));
    return false;
  }

  void check_attributes(const json& doc) {
    auto it = doc.find("attributes");
    if (it == doc.end()) return;
    if (!it->is_object()) return;  // the schema said what it must be
    for (const auto& item : it->items()) {
      const std::string field = sub("attributes", item.key());
      const json& v = item.value();
      if (!is_identifier(item.key()) || !v.is_number()) continue;  // the schema said
      if (is_builtin_symbol(item.key()) || is_device_symbol(item.key())) {
        problem(field, quote_untrusted(item.key()) +
                           " is a built-in symbol of expressions; an attribute cannot take its "
                           "name");
        continue;
      }
      if (op_ && !op_->attributes.count(item.key())) {
        std::vector<std::string> names;
        for (const auto& [n, d] : op_->attributes) names.push_back(n);
        problem(field, "op " + quote_untrusted(m_.op) + " has no attribute " + quote_untrusted(item.key()) +
                           "; expected one of: " + (names.empty() ? "(none)" : join_capped(names)));
        continue;
      }
      // Integers that a double (and so the attribute) holds exactly: 2^64 - 1 used to wrap.
      constexpr int64_t kExact = int64_t{1} << 53;
      if (v.is_number_integer() &&
          ((v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kExact)) ||
           (!v.is_number_unsigned() && (v.get<int64_t>() > kExact || v.get<int64_t>() < -kExact)))) {
        problem(field, "expected an integer between -2^53 and 2^53, found " + describe_json(v));
        continue;
      }
      Attribute a;
      a.name = item.key();
      a.value = v.get<double>();
      a.is_integer = v.is_number_integer();
      m_.attributes.push_back(a);
    }
  }

  /// Checks a list of package-relative paths (its form: the schema's, which also says when
  /// "sources" is missing); `kind` selects include dirs, sources or data files.
  std::vector<std::string> check_paths(const json& doc, const std::string& key, PathKind kind) {
    std::vector<std::string> out;
    auto it = doc.find(key);
    const bool directory = kind == PathKind::directory;
    if (it == doc.end() || !it->is_array()) return out;  // the schema said
    if (it->size() > kMaxPathEntries) {
      problem(key, "lists " + std::to_string(it->size()) + " paths; expected at most " +
                       std::to_string(kMaxPathEntries));
      return out;
    }
    std::set<std::string> seen;
    std::map<fs::path, std::string> seen_files;  // canonical path -> how the manifest named it
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& v = (*it)[i];
      const std::string field = at(key, i);
      if (!v.is_string()) continue;  // the schema said
      const std::string rel = v.get<std::string>();
      if (!seen.insert(rel).second) continue;  // the schema said (uniqueItems)
      if (files_unread()) {
        out.push_back(rel);
        continue;
      }
      fs::path resolved;
      const std::string err = package_path_problem(m_.dir, rel, kind, &resolved);
      if (!err.empty()) {
        // An include directory outside: a source package, which kgate pack makes self-contained.
        const bool outside = directory && climbs(rel);
        problem(field, err + (outside ? "; a source package whose include_dirs reach outside it is packed "
                                        "first: kgate pack SRC OUT copies those headers in"
                                      : ""));
        continue;
      }
      // Two names (links) of one file: 2,000 symbolic links to one source once took 4.4 GB.
      if (auto [pos, fresh] = seen_files.emplace(resolved, rel); !fresh) {
        problem(field, quote_untrusted(rel) + " is the same file as " + quote_untrusted(pos->second) +
                           " (through a link); list each file once");
        continue;
      }
      out.push_back(rel);
    }
    return out;
  }

  /// "captured_inputs": ["captured/llama_b4.safetensors"]: one call's input tensors per file, run
  /// as fixed cases; each must fit the op (tensor names, dtypes, shapes; core/captured.hpp).
  void check_captured_inputs(const json& doc) {
    const auto files = check_paths(doc, "captured_inputs", PathKind::data);  // the usable paths
    std::set<std::string> left(files.begin(), files.end());
    const auto it = doc.find("captured_inputs");
    for (std::size_t i = 0; it != doc.end() && it->is_array() && i < it->size(); ++i) {
      if (!(*it)[i].is_string() || left.erase((*it)[i].get<std::string>()) == 0) continue;
      const std::string rel = (*it)[i].get<std::string>();
      const std::string field = at("captured_inputs", i);
      if (rel.find(':') != std::string::npos) {
        problem(field, quote_untrusted(rel) + " holds a ':', which case ids cannot carry; rename the file");
        continue;
      }
      if (op_ && !files_unread()) {
        try {
          captured_case(*op_, rel, (m_.dir / rel).string(), 0);
        } catch (const Error& e) {
          problem(field, e.what());
          continue;
        }
      }
      m_.captured_inputs.push_back(rel);
    }
  }

  void check_sources(const json& doc) {
    check_binaries(doc);
    m_.sources = check_paths(doc, "sources", PathKind::source);
  }

  /// "cubin": {"sm_90": "k.sm_90.cubin"}, "fatbin": "k.fatbin", "ptx": "k.ptx": precompiled kernels.
  void check_binaries(const json& doc) {
    const auto one = [&](const json& v, const std::string& field) -> std::string {
      if (!v.is_string()) return {};  // the schema said
      if (files_unread()) return v.get<std::string>();
      const std::string err = package_path_problem(m_.dir, v.get<std::string>(), PathKind::binary, nullptr);
      if (!err.empty()) {
        problem(field, err);
        return {};
      }
      return v.get<std::string>();
    };
    if (auto it = doc.find("cubin"); it != doc.end()) {
      static const std::regex arch_re("sm_[0-9]{2,3}[af]?");
      if (it->is_object()) {  // else the schema said, as it says what a key must be
        for (auto e = it->begin(); e != it->end(); ++e) {
          if (e.key().size() > 8 || !std::regex_match(e.key(), arch_re)) continue;
          if (auto path = one(*e, sub("cubin", e.key())); !path.empty()) m_.cubins[e.key()] = path;
        }
      }
    }
    if (auto it = doc.find("fatbin"); it != doc.end()) m_.fatbin = one(*it, "fatbin");
    if (auto it = doc.find("ptx"); it != doc.end()) m_.ptx = one(*it, "ptx");
  }

  void check_include_dirs(const json& doc) {
    m_.include_dirs = check_paths(doc, "include_dirs", PathKind::directory);
    if (files_unread()) return;
    std::size_t files = 0;
    std::uintmax_t bytes = 0;
    for (std::size_t i = 0; i < m_.include_dirs.size(); ++i) {
      std::vector<PackageFile> headers;
      const std::string err = scan_include_dir(m_.dir, m_.include_dirs[i], headers, files, bytes);
      if (!err.empty()) problem(at("include_dirs", i), err);
    }
  }

  void check_nvrtc_options(const json& doc) {
    auto it = doc.find("nvrtc_options");
    if (it != doc.end()) m_.nvrtc_options = option_list(*it, "nvrtc_options");
  }

  /// An array of NVRTC options from the allow-list; the good ones are returned, the others reported.
  std::vector<std::string> option_list(const json& v, const std::string& field) {
    std::vector<std::string> out;
    if (!v.is_array() || v.size() > kMaxOptions) return out;  // the schema said
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) continue;
      // The schema holds the allow-list too; this says why an option is refused.
      const std::string err = nvrtc_option_problem(v[i].get<std::string>());
      if (!err.empty())
        problem(at(field, i), err);
      else
        out.push_back(v[i].get<std::string>());
    }
    return out;
  }

  /// "nvrtc_options_for_dtype": {"bf16": ["-DENABLE_BF16"]}: options of the dtype's compile only.
  void check_dtype_options(const json& doc) {
    auto it = doc.find("nvrtc_options_for_dtype");
    if (it == doc.end()) return;
    if (!it->is_object()) return;  // the schema said
    for (auto e = it->begin(); e != it->end(); ++e) {
      const std::string field = sub("nvrtc_options_for_dtype", e.key());
      auto d = dtype_at(field, json(e.key()), true);
      if (!d) continue;
      if (std::find(m_.guard.dtypes.begin(), m_.guard.dtypes.end(), *d) == m_.guard.dtypes.end()) {
        problem(field, quote_untrusted(e.key()) + " is not in guard.dtypes: its options would never be used");
        continue;
      }
      m_.nvrtc_options_for_dtype[*d] = option_list(*e, field);
    }
  }

  /// Reads a dtype name; nullopt (and a problem) when it is not one of `allowed`.
  std::optional<DType> dtype_at(const std::string& field, const json& v, bool floating_only) {
    const std::string expected =
        floating_only ? "one of f16, bf16, f32, f64" : "one of f16, bf16, f32, f64, i32, i64";
    if (!v.is_string()) return std::nullopt;  // the schema said
    DType d;
    try {
      d = parse_dtype(v.get<std::string>());
    } catch (const Error&) {
      problem(field,
              "unknown dtype " + quote_untrusted(v.get<std::string>()) + "; expected " + expected);
      return std::nullopt;
    }
    if (floating_only && !is_floating(d)) {
      problem(field, "dtype " + quote_untrusted(v.get<std::string>()) +
                         " is not supported here; expected " + expected);
      return std::nullopt;
    }
    return d;
  }

  void check_guard_dtypes(const json& doc) {
    auto g = doc.find("guard");
    if (g == doc.end() || !g->is_object()) return;  // reported by check_guard
    // The schema said what dtypes and ranks must be (a non-empty array, no dtype twice, ranks 1 to 8).
    auto it = g->find("dtypes");
    if (it == g->end() || !it->is_array()) return;
    for (std::size_t i = 0; i < it->size(); ++i) {
      auto d = dtype_at(at("guard.dtypes", i), (*it)[i], true);
      if (d && std::find(m_.guard.dtypes.begin(), m_.guard.dtypes.end(), *d) == m_.guard.dtypes.end())
        m_.guard.dtypes.push_back(*d);
    }
    // Ranks are read here too: the symbol bindings are checked against them.
    auto r = g->find("ranks");
    if (r == g->end() || !r->is_array()) return;
    for (const json& v : *r)
      if (v.is_number_integer() && v.get<int64_t>() >= 1 && v.get<int64_t>() <= kMaxRank)
        m_.guard.ranks.push_back(static_cast<int>(v.get<int64_t>()));
  }

  void check_symbols(const json& doc) {
    auto it = doc.find("symbols");
    if (it == doc.end() || !it->is_object()) return;  // the schema said
    for (const auto& item : it->items()) {
      const std::string field = sub("symbols", item.key());
      const std::string& name = item.key();
      if (!is_identifier(name)) continue;  // the schema said
      const auto& fns = expr_function_names();
      if (std::find(fns.begin(), fns.end(), name) != fns.end()) {
        problem(field, quote_untrusted(name) + " is an expression function; choose another symbol name");
        continue;
      }
      if (m_.attribute(name)) {
        problem(field, quote_untrusted(name) + " is also an attribute; a symbol needs its own name");
        continue;
      }
      if (is_builtin_symbol(name)) {
        problem(field, quote_untrusted(name) +
                           " is a built-in symbol (the bytes of one element of the call's dtype); "
                           "choose another symbol name");
        continue;
      }
      if (is_device_symbol(name)) {
        problem(field, quote_untrusted(name) + " is a built-in symbol (a property of the device the launch runs on); "
                                          "choose another symbol name");
        continue;
      }
      if (is_tensor_symbol_form(name)) {
        problem(field, quote_untrusted(name) +
                           " has the form of a tensor symbol (numel_T, align_T, stride_T_D), which guard.require "
                           "and when.if name for the call's tensors; choose another symbol name");
        continue;
      }
      // Declared, even if its binding below is wrong: expressions naming it are not at fault.
      known_symbols_.insert(name);
      declared_symbols_.push_back(name);
      const json& v = item.value();
      // [TENSOR, DIM], DIM from -8 to 7: else the schema said.
      if (!v.is_array() || v.size() != 2 || !v[1].is_number_integer()) continue;
      if (!check_tensor_name(at(field, 0), v[0])) continue;
      if (!dimension_fits(at(field, 1), v[1])) continue;
      const int64_t dim = v[1].get<int64_t>();
      if (dim < -kMaxRank || dim >= kMaxRank) continue;
      bool ok = true;
      for (int rank : m_.guard.ranks) {
        if (dim < -rank || dim >= rank) {
          problem(at(field, 1), "dimension " + std::to_string(dim) + " does not exist in a rank-" +
                                    std::to_string(rank) + " tensor (guard.ranks); expected " +
                                    std::to_string(-rank) + " to " + std::to_string(rank - 1));
          ok = false;
          break;
        }
      }
      if (!ok) continue;
      m_.symbols.push_back({name, v[0].get<std::string>(), static_cast<int>(dim)});
    }
  }

  /// guard.ranks applies to every tensor the symbols bind to. The op fixes each tensor's rank, so a
  /// listed set that leaves one out puts every call outside the guard: the package would pass
  /// without its kernels ever running.
  void check_ranks_against_op() {
    if (!op_ || m_.guard.ranks.empty()) return;
    std::set<std::string> seen;
    for (const auto& s : m_.symbols) {
      if (!seen.insert(s.tensor).second) continue;
      const TensorSpec* t = nullptr;
      for (const auto* list : {&op_->inputs, &op_->outputs})
        for (const auto& spec : *list)
          if (spec.name == s.tensor) t = &spec;
      if (!t) continue;
      const int rank = static_cast<int>(t->shape.size());
      if (std::find(m_.guard.ranks.begin(), m_.guard.ranks.end(), rank) != m_.guard.ranks.end()) continue;
      std::string listed;
      for (int r : m_.guard.ranks) listed += (listed.empty() ? "" : ", ") + std::to_string(r);
      problem("guard.ranks", "[" + listed + "] leaves out rank " + std::to_string(rank) + ", the rank of op " +
                                 quote_untrusted(m_.op) + "'s tensor " + quote_untrusted(s.tensor) + " (bound by symbol " + s.name +
                                 "): every call would fall outside the guard and the package's kernels would never "
                                 "run; list " + std::to_string(rank) + ", or leave guard.ranks out");
      return;
    }
  }

  /// What a float expression may name: the shape symbols, every attribute (the manifest's and the
  /// op's, integer or not) and the built-in symbols.
  std::set<std::string, std::less<>> float_expression_names() const {
    std::set<std::string, std::less<>> out = known_symbols_;
    for (const auto& a : m_.attributes) out.insert(a.name);
    if (op_)
      for (const auto& [name, value] : op_->attributes) out.insert(name);
    return out;
  }

  /// Expressions may also name integer attributes and the built-in symbols.
  void declare_expression_names() {
    for (const auto& a : m_.attributes)
      if (a.is_integer) known_symbols_.insert(a.name);
    for (const auto& b : builtin_symbol_names()) known_symbols_.insert(b);
    // Launches and workspaces may read the device's properties (the guard may not: below).
    for (const auto& d : device_symbol_names()) known_symbols_.insert(d);
  }

  /// Parses an expression (a string or a JSON integer) and checks its symbols; `tensors`: it may
  /// also name the call's tensor symbols (guard.require, when.if).
  std::optional<Expr> expr_at(const std::string& field, const json& v, bool tensors = false) {
    std::string text;
    if (v.is_number_integer())
      text = std::to_string(v.get<int64_t>());
    else if (v.is_string())
      text = v.get<std::string>();
    else {
      problem(field,
              "expected an integer expression such as \"ceil_div(N, 256)\", found " + describe_json(v));
      return std::nullopt;
    }
    try {
      Expr e = Expr::parse(text);
      if (!tensors) {
        e.check_symbols(known_symbols_);
        return e;
      }
      auto known = known_symbols_;
      if (op_) {
        for (const auto& t : tensor_symbol_names(*op_)) known.insert(t);
      } else {  // the op's tensors are not known here: any name of the form is taken
        for (const auto& s : e.symbols())
          if (is_tensor_symbol_form(s)) known.insert(s);
      }
      e.check_symbols(known);
      return e;
    } catch (const Error& e) {
      problem(field, e.what());
      return std::nullopt;
    }
  }

  /// A list of expressions, such as grid, block or a workspace shape (its form: the schema's). A
  /// launch's grid and block may come from launch_defaults: only the merged launch can lack them.
  std::vector<Expr> expr_list(const json& obj, const std::string& field, const std::string& key) {
    std::vector<Expr> out;
    auto it = obj.find(key);
    if (it == obj.end() && key != "shape")
      problem(sub(field, key), "missing (in the launch or in launch_defaults); expected an array of 1 to 3 integer "
                               "expressions such as [\"B\", 1, 1]");
    if (it == obj.end() || !it->is_array()) return out;
    for (std::size_t i = 0; i < it->size(); ++i)
      if (auto e = expr_at(at(sub(field, key), i), (*it)[i])) out.push_back(*e);
    return out;
  }

  /// A start value as written: a number, "inf" or "-inf" (nullopt: the schema said).
  static std::optional<double> start_value(const json& v) {
    if (v.is_number()) return v.get<double>();
    if (v == "inf") return std::numeric_limits<double>::infinity();
    if (v == "-inf") return -std::numeric_limits<double>::infinity();
    return std::nullopt;
  }

  /// An integer tensor starts at a whole, finite value that its type holds.
  bool whole_start(double v, DType dtype, const std::string& field, const std::string& what) {
    if (is_floating(dtype)) return true;
    const double lo = dtype == DType::i32 ? -2147483648.0 : -9223372036854775808.0;
    if (std::isfinite(v) && v == std::trunc(v) && v >= lo && v < -lo) return true;
    problem(field, what + " is " + dtype_name(dtype) + ": its start value is a whole number it holds; found " +
                       format_number(v, "%.17g"));
    return false;
  }

  /// "outputs": {"C": {"start": 0}}: outputs the kernel reads before it writes them.
  void check_output_starts(const json& doc) {
    auto it = doc.find("outputs");
    if (it == doc.end() || !it->is_object()) return;  // the schema said
    for (const auto& [name, spec] : it->items()) {
      const std::string field = sub("outputs", name);
      if (!spec.is_object() || !spec.contains("start")) continue;  // the schema said
      const auto v = start_value(spec.at("start"));
      if (!v) continue;  // the schema said
      if (op_) {
        const auto o = std::find_if(op_->outputs.begin(), op_->outputs.end(), [&](const TensorSpec& t) { return t.name == name; });
        if (o == op_->outputs.end()) {
          std::vector<std::string> names;
          for (const auto& t : op_->outputs) names.push_back(t.name);
          problem(field, "op " + quote_untrusted(m_.op) + " has no output " + quote_untrusted(name) + "; its outputs: " +
                             join_capped(names));
          continue;
        }
        if (!o->alias.empty()) {
          problem(field, "output " + quote_untrusted(name) + " is written in place into input " + quote_untrusted(o->alias) +
                             ": it holds that input's values, not a start value; remove it from \"outputs\"");
          continue;
        }
        if (!o->dtype.empty() && !whole_start(*v, parse_dtype(o->dtype), sub(field, "start"), "output " + quote_untrusted(name)))
          continue;
      }
      m_.output_start[name] = *v;
    }
  }

  void check_workspace(const json& doc) {
    auto it = doc.find("workspace");
    if (it == doc.end() || !it->is_array()) return;  // the schema said
    const auto tensors = op_tensor_names();
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& w = (*it)[i];
      const std::string field = at("workspace", i);
      if (!w.is_object()) continue;  // the schema said
      Workspace ws;
      bool ok = true;
      if (auto name = string_at(w, "name")) {
        if (!is_identifier(*name)) {  // the schema said
          ok = false;
        } else if (std::find(tensors.begin(), tensors.end(), *name) != tensors.end()) {
          problem(sub(field, "name"), quote_untrusted(*name) + " is a tensor of op " +
                                          quote_untrusted(m_.op) + "; a workspace needs its own name");
          ok = false;
        } else if (workspace_names_.count(*name)) {
          problem(sub(field, "name"), "workspace " + quote_untrusted(*name) + " is declared twice");
          ok = false;
        }
        ws.name = *name;
      } else {
        ok = false;
      }
      if (auto d = w.find("dtype"); d == w.end()) {
        ok = false;  // the schema said
      } else if (auto dt = dtype_at(sub(field, "dtype"), *d, false)) {
        ws.dtype = *dt;
      } else {
        ok = false;
      }
      const std::size_t before = problems_.size();
      ws.shape = expr_list(w, field, "shape");
      if (problems_.size() != before) ok = false;
      // A size known now must be one memory can hold (2^64 bytes wrapped to a small number).
      int64_t elements = 1;
      bool known = ok;
      for (std::size_t d = 0; d < ws.shape.size() && ok; ++d) {
        const std::size_t seen = problems_.size();
        const auto v = judge(ws.shape[d], at(sub(field, "shape"), d));
        if (problems_.size() != seen) {
          ok = false;
        } else if (!v) {
          known = false;
        } else if (*v < 0) {
          problem(at(sub(field, "shape"), d), "a dimension is >= 0; found " + std::to_string(*v));
          ok = false;
        } else if (__builtin_mul_overflow(elements, *v, &elements)) {
          elements = std::numeric_limits<int64_t>::max();
        }
      }
      if (known && ok && workspace_too_big(elements, ws.dtype)) {
        problem(sub(field, "shape"), "the workspace would take more than 2^48 bytes (256 TiB), "
                                     "more than any GPU holds");
        ok = false;
      }
      if (auto z = w.find("zero"); z != w.end()) {
        if (z->is_boolean())
          ws.zero = z->get<bool>();
        else
          ok = false;  // the schema said
      }
      if (ws.zero) ws.start = 0.0;
      if (auto st = w.find("start"); st != w.end()) {
        const auto v = start_value(*st);
        if (!v) {
          ok = false;  // the schema said
        } else if (ws.zero && *v != 0) {
          problem(sub(field, "start"), "\"zero\": true and \"start\": " + st->dump() + " disagree; give one of them");
          ok = false;
        } else if (!whole_start(*v, ws.dtype, sub(field, "start"), "workspace " + quote_untrusted(ws.name))) {
          ok = false;
        } else {
          ws.start = *v;
        }
      }
      if (!ws.name.empty()) workspace_names_.insert(ws.name);
      if (ok) m_.workspace.push_back(std::move(ws));
    }
  }

  void check_kernel(const json& l, const std::string& field, Launch& launch) {
    const std::string expected =
        "a kernel name expression such as \"softmax_rows<float>\", or an object of them per dtype "
        "such as {\"f32\": \"k<float>\"}";
    auto it = l.find("kernel");
    if (it == l.end()) {
      problem(sub(field, "kernel"), "missing; expected " + expected);
      return;
    }
    const std::string name_expected =
        "a C++ kernel name (templates allowed: letters, digits, spaces and _ : < > , . * & ( ) -)";
    if (it->is_string()) {
      const std::string name = it->get<std::string>();
      if (!is_name_expression(name))
        problem(sub(field, "kernel"), "expected " + name_expected + ", found " + describe_json(*it));
      else
        launch.kernel = name;
      return;
    }
    if (!it->is_object() || it->empty()) return;  // the schema said
    const std::string kfield = sub(field, "kernel");
    for (const auto& item : it->items()) {
      const std::string f = sub(kfield, item.key());
      auto d = dtype_at(f, json(item.key()), true);
      if (!d) continue;
      if (std::find(m_.guard.dtypes.begin(), m_.guard.dtypes.end(), *d) == m_.guard.dtypes.end()) {
        problem(f, "dtype " + quote_untrusted(item.key()) + " is not in guard.dtypes");
        continue;
      }
      if (!item.value().is_string()) continue;  // the schema said
      // Checked again once for_each has replaced each {NAME}.
      if (!is_name_expression(item.value().get<std::string>())) {
        problem(f, "expected " + name_expected + ", found " + describe_json(item.value()));
        continue;
      }
      launch.kernel_for_dtype[*d] = item.value().get<std::string>();
    }
    for (DType d : m_.guard.dtypes)
      if (!launch.kernel_for_dtype.count(d) && it->find(dtype_name(d)) == it->end())
        problem(kfield, "no kernel for dtype " + quote_untrusted(dtype_name(d)) +
                            " of guard.dtypes; expected a name expression for every guard dtype");
  }

  std::optional<ScalarType> arg_type(const json& a, const std::string& field, bool integer_only) {
    // Missing, or not a type the argument's kind takes: the schema said.
    auto it = a.find("type");
    if (it == a.end()) return std::nullopt;
    auto t = it->is_string() ? parse_scalar_type(it->get<std::string>()) : std::nullopt;
    if (!t || (integer_only && !is_integer(*t))) return std::nullopt;
    return t;
  }

  void check_arg(const json& a, const std::string& field, Launch& launch) {
    if (!a.is_object()) return;  // the schema said
    std::vector<std::string> kinds;
    for (const auto& k : kArgKinds)
      if (a.contains(k)) kinds.push_back(k);
    if (kinds.size() != 1) return;  // the schema asks for exactly one
    KernelArg arg;
    const std::string& kind = kinds[0];
    const json& v = a[kind];
    const std::string vfield = sub(field, kind);
    if (kind == "tensor" || kind == "workspace") {
      if (a.contains("type")) {
        problem(sub(field, "type"),
                "a " + kind + " argument is passed as a pointer; remove \"type\"");
        return;
      }
      if (kind == "tensor") {
        if (!check_tensor_name(vfield, v)) return;
        arg.kind = KernelArg::Kind::tensor;
      } else {
        if (!v.is_string()) return;  // the schema said
        if (!workspace_names_.count(v.get<std::string>())) {
          std::vector<std::string> names(workspace_names_.begin(), workspace_names_.end());
          problem(vfield, "expected the name of a tensor declared in \"workspace\" (" +
                              (names.empty() ? std::string("none declared") : join_capped(names)) +
                              "), found " + describe_json(v));
          return;
        }
        arg.kind = KernelArg::Kind::workspace;
      }
      arg.name = v.get<std::string>();
      launch.args.push_back(arg);
      return;
    }
    if (kind == "shape") {
      auto e = expr_at(vfield, v);
      auto t = arg_type(a, field, true);
      if (!e || !t) return;
      arg.kind = KernelArg::Kind::shape;
      arg.value = *e;
      arg.type = *t;
    } else if (kind == "attribute") {
      auto t = arg_type(a, field, false);
      if (!v.is_string()) return;  // the schema said
      const std::string name = v.get<std::string>();
      const Attribute* attr = m_.attribute(name);
      // An attribute of the op that "attributes" does not pin: the kernel takes the call's value,
      // whatever it is (e.g. layer_norm's eps).
      const bool of_op = !attr && op_ && op_->attributes.count(name);
      // No op to ask (its problem, an unknown op or an op file that did not load, is reported
      // already): an attribute it may have is not a second problem.
      if (!attr && !op_) return;
      if (!attr && !of_op) {
        std::vector<std::string> names;
        for (const auto& x : m_.attributes) names.push_back(x.name);
        if (op_)
          for (const auto& [n, d] : op_->attributes)
            if (!m_.attribute(n)) names.push_back(n);
        problem(vfield, "expected the name of an attribute of the op or one declared in "
                        "\"attributes\" (" +
                            (names.empty() ? std::string("none") : join_capped(names)) + "), found " +
                            describe_json(v));
        return;
      }
      if (!t) return;
      const double op_default = attr ? 0 : op_->attributes.at(name);
      const bool integer_value = attr ? attr->is_integer : std::floor(op_default) == op_default;
      if (is_integer(*t) && !integer_value) {
        problem(sub(field, "type"),
                "attribute " + quote_untrusted(name) + " is not an integer; expected f32 or f64");
        return;
      }
      arg.kind = KernelArg::Kind::attribute;
      arg.name = name;
      arg.type = *t;
    } else if (kind == "stride") {
      auto t = arg_type(a, field, true);
      if (!check_stride(vfield, v, arg) || !t) return;
      arg.kind = KernelArg::Kind::stride;
      arg.type = *t;
    } else if (v.is_string()) {  // a float expression
      auto t = arg_type(a, field, false);
      if (!t) return;
      if (is_integer(*t)) {
        problem(sub(field, "type"), "a float expression is passed as f32 or f64; an integer value is {\"shape\": " +
                                        quote_untrusted(v.get<std::string>()) + ", \"type\": " +
                                        quote_untrusted(scalar_type_name(*t)) + "}");
        return;
      }
      try {
        FloatExpr e = FloatExpr::parse(v.get<std::string>());
        e.check_symbols(float_expression_names());
        arg.float_expr = std::move(e);
      } catch (const Error& e) {
        problem(vfield, e.what());
        return;
      }
      arg.kind = KernelArg::Kind::scalar;
      arg.type = *t;
    } else {
      auto t = arg_type(a, field, false);
      if (!v.is_number() || !t) return;  // the schema said
      arg.kind = KernelArg::Kind::scalar;
      arg.type = *t;
      if (!scalar_fits(vfield, v, *t, arg)) return;
    }
    launch.args.push_back(arg);
  }

  /// A dimension index the JSON reader holds as an unsigned number above 2^63 - 1 would read as a
  /// negative one (18446744073709551615 as -1, the last dimension): refused, as any index outside
  /// -8 to 7 is.
  bool dimension_fits(const std::string& field, const json& v) {
    if (!v.is_number_unsigned() || v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) return true;
    problem(field, "dimension " + v.dump() + " is out of range; expected " + std::to_string(-kMaxRank) + " to " +
                       std::to_string(kMaxRank - 1));
    return false;
  }

  /// Reads a stride argument's [TENSOR, DIM]; the dimension must exist in the op's tensor.
  bool check_stride(const std::string& field, const json& v, KernelArg& arg) {
    if (!v.is_array() || v.size() != 2 || !v[1].is_number_integer()) return false;  // the schema said
    if (!check_tensor_name(at(field, 0), v[0])) return false;
    if (!dimension_fits(at(field, 1), v[1])) return false;
    const int64_t dim = v[1].get<int64_t>();
    int64_t rank = kMaxRank;
    std::string shape;
    if (op_) {
      for (const auto* list : {&op_->inputs, &op_->outputs})
        for (const auto& t : *list)
          if (t.name == v[0].get<std::string>()) {
            rank = static_cast<int64_t>(t.shape.size());
            shape = join_capped(t.shape);
          }
    }
    if (dim < -rank || dim >= rank) {
      problem(at(field, 1),
              op_ ? "dimension " + std::to_string(dim) + " does not exist in " +
                        v[0].get<std::string>() + ":[" + shape + "] of op " + quote_untrusted(m_.op) +
                        "; expected " + std::to_string(-rank) + " to " + std::to_string(rank - 1)
                  : "expected a dimension from -8 to 7, found " + describe_json(v[1]));
      return false;
    }
    arg.name = v[0].get<std::string>();
    arg.dim = static_cast<int>(dim);
    return true;
  }

  bool scalar_fits(const std::string& field, const json& v, ScalarType t, KernelArg& arg) {
    if (!is_integer(t)) {
      arg.float_value = v.get<double>();
      if (t == ScalarType::f32 && std::abs(arg.float_value) > std::numeric_limits<float>::max()) {
        problem(field, describe_json(v) + " does not fit in f32");
        return false;
      }
      return true;
    }
    int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
    if (t == ScalarType::i32)
      lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
    if (t == ScalarType::u32) lo = 0, hi = std::numeric_limits<uint32_t>::max();
    if (t == ScalarType::u64) lo = 0;
    const std::string range = "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))) {
      problem(field,
              "expected " + range + " for type " + scalar_type_name(t) + ", found " + describe_json(v));
      return false;
    }
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) {
      problem(field,
              "expected " + range + " for type " + scalar_type_name(t) + ", found " + describe_json(v));
      return false;
    }
    arg.int_value = x;
    return true;
  }

  /// Replaces every "{NAME}" of `bindings` in the strings of `v` (keys stay).
  static json substitute(const json& v, const std::map<std::string, int64_t>& bindings) {
    if (v.is_string()) {
      std::string text = v.get<std::string>();
      for (const auto& [name, value] : bindings) {
        const std::string key = "{" + name + "}";
        for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at))
          text.replace(at, key.size(), std::to_string(value));
      }
      return text;
    }
    if (v.is_array()) {
      json out = json::array();
      for (const auto& e : v) out.push_back(substitute(e, bindings));
      return out;
    }
    if (v.is_object()) {
      json out = json::object();
      for (auto it = v.begin(); it != v.end(); ++it) out[it.key()] = substitute(it.value(), bindings);
      return out;
    }
    return v;
  }

  /// The bindings a launch's "for_each" lists: {"VPT": [1, 2, 4]} (every combination of the
  /// lists, in order) or [{"VPT": 1, "LO": 0}, {"VPT": 2, "LO": 32}]. Names are identifiers; values
  /// integers (the schema said where they are not). Problems are reported and an empty list returned.
  std::vector<std::map<std::string, int64_t>> for_each_bindings(const json& f, const std::string& field) {
    const auto int_at = [](const json& v, int64_t& out) {
      if (!v.is_number_integer()) return false;
      out = v.get<int64_t>();
      return true;
    };
    std::vector<std::map<std::string, int64_t>> out;
    bool ok = true;
    if (f.is_object() && !f.empty()) {
      // Every combination: said as a count before any is made.
      uint64_t combinations = 1;
      for (auto it = f.begin(); it != f.end(); ++it)
        if (it->is_array()) combinations = std::min<uint64_t>(combinations * std::max<size_t>(it->size(), 1), 1u << 20);
      if (combinations > kMaxExpandedLaunches) {
        problem(field, "expands to " + std::to_string(combinations) + " launches, more than " +
                           std::to_string(kMaxExpandedLaunches));
        return {};
      }
      out.push_back({});
      for (auto it = f.begin(); it != f.end(); ++it) {
        if (!is_identifier(it.key())) {  // the schema said
          ok = false;
          continue;
        }
        if (!it->is_array() || it->empty() || it->size() > kMaxExpandedLaunches) {
          ok = false;  // the schema said
          continue;
        }
        std::vector<std::map<std::string, int64_t>> next;
        for (std::size_t j = 0; j < it->size(); ++j) {
          int64_t v = 0;
          if (!int_at((*it)[j], v)) {
            ok = false;
            continue;
          }
          for (auto b : out) {
            b[it.key()] = v;
            next.push_back(std::move(b));
          }
        }
        out = std::move(next);
      }
    } else if (f.is_array() && !f.empty()) {
      for (std::size_t j = 0; j < f.size() && j <= kMaxExpandedLaunches; ++j) {
        const json& o = f[j];
        if (!o.is_object() || o.empty()) {
          ok = false;  // the schema said
          continue;
        }
        std::map<std::string, int64_t> b;
        for (auto it = o.begin(); it != o.end(); ++it) {
          int64_t v = 0;
          if (is_identifier(it.key()) && int_at(*it, v)) b[it.key()] = v;
          else ok = false;
        }
        out.push_back(std::move(b));
      }
    } else {
      return {};  // the schema said
    }
    if (!ok) return {};
    return out;
  }

  void check_launches(const json& doc) {
    auto it = doc.find("launches");
    if (it == doc.end() || !it->is_array() || it->empty() || it->size() > kMaxLaunches) {
      // The schema said; and the launches are unknown, so nothing is concluded from them (an
      // output "never passed to a kernel" would be a wrong lead).
      launches_incomplete_ = true;
      return;
    }
    // "launch_defaults": keys a launch that omits them takes from there.
    json defaults = json::object();
    if (auto d = doc.find("launch_defaults"); d != doc.end()) {
      if (d->is_object())  // else the schema said
        for (const auto& k : kLaunchDefaultKeys)
          if (auto v = d->find(k); v != d->end()) defaults[k] = *v;
    }
    // Each launch, with its defaults and every binding of its "for_each", in order.
    std::vector<std::pair<std::string, json>> expanded;
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& l = (*it)[i];
      const std::string field = at("launches", i);
      if (!l.is_object()) continue;  // the schema said
      json merged = defaults;
      for (auto kv = l.begin(); kv != l.end(); ++kv)
        if (kv.key() != "for_each") merged[kv.key()] = kv.value();
      auto f = l.find("for_each");
      if (f == l.end()) {
        expanded.emplace_back(field, std::move(merged));
        continue;
      }
      const auto bindings = for_each_bindings(*f, sub(field, "for_each"));
      if (bindings.empty()) launches_incomplete_ = true;  // reported; its launches are unknown
      for (const auto& b : bindings) {
        std::string label = field + "{";
        for (const auto& [name, value] : b) label += (label.back() == '{' ? "" : ",") + name + "=" + std::to_string(value);
        expanded.emplace_back(label + "}", substitute(merged, b));
      }
    }
    if (expanded.size() > kMaxExpandedLaunches) {
      problem("launches", "expands to " + std::to_string(expanded.size()) + " launches (for_each), more than " +
                              std::to_string(kMaxExpandedLaunches));
      launches_incomplete_ = true;
      return;
    }
    for (auto& [field, l] : expanded) {
      Launch launch;
      check_kernel(l, field, launch);
      launch.grid = expr_list(l, field, "grid");
      launch.block = expr_list(l, field, "block");
      if (auto s = l.find("shared_mem"); s != l.end())
        if (auto e = expr_at(sub(field, "shared_mem"), *s)) launch.shared_mem = *e;
      if (auto s = l.find("max_dynamic_shared_mem"); s != l.end())
        launch.max_dynamic_shared_mem = expr_at(sub(field, "max_dynamic_shared_mem"), *s);
      if (auto c = l.find("carveout"); c != l.end() && c->is_number_integer())  // (the schema: -1 to 100)
        launch.carveout = static_cast<int>(c->get<int64_t>());
      if (l.find("cluster") != l.end()) launch.cluster = expr_list(l, field, "cluster");
      auto args = l.find("args");
      if (args == l.end()) {
        problem(sub(field, "args"),
                "missing; expected an array of kernel arguments in parameter "
                "order, such as [{\"tensor\": \"x\"}]");
      } else if (args->is_array()) {  // else the schema said
        for (std::size_t j = 0; j < args->size(); ++j)
          check_arg((*args)[j], at(sub(field, "args"), j), launch);
      }
      if (auto w = l.find("when"); w != l.end()) check_when(*w, sub(field, "when"), launch);
      if (auto o = l.find("nvrtc_options"); o != l.end()) launch.nvrtc_options = option_list(*o, sub(field, "nvrtc_options"));
      check_launch_settings(launch, field);
      launch.field = field;
      m_.launches.push_back(std::move(launch));
    }
  }

  void check_when(const json& w, const std::string& field, Launch& launch) {
    if (!w.is_object()) return;  // the schema said
    if (auto e = w.find("if"); e != w.end())
      if (auto x = expr_at(sub(field, "if"), *e, true)) launch.when.if_expr = *x;
    if (auto l = w.find("layouts"); l != w.end())
      launch.when.layouts = layouts_at(*l);
  }

  /// A non-empty array of layout names; the valid ones are returned, the others reported.
  std::vector<Layout> layouts_at(const json& v) {
    std::vector<Layout> out;  // the schema said what the array must hold
    if (!v.is_array()) return out;
    for (const json& e : v)
      if (auto l = e.is_string() ? parse_layout(e.get<std::string>()) : std::nullopt) out.push_back(*l);
    return out;
  }

  /// A launch that names a layout outside guard.layouts would never run for it: a mistake.
  void check_when_layouts() {
    if (m_.guard.layouts.empty()) return;  // guard.layouts itself is wrong: reported there
    for (std::size_t i = 0; i < m_.launches.size(); ++i) {
      const auto& layouts = m_.launches[i].when.layouts;
      for (std::size_t j = 0; j < layouts.size(); ++j) {
        const auto& g = m_.guard.layouts;
        if (std::find(g.begin(), g.end(), layouts[j]) != g.end()) continue;
        std::vector<std::string> names;
        for (Layout l : g) names.push_back(layout_name(l));
        problem(at(sub(m_.launches[i].field, "when.layouts"), j),
                std::string("layout ") + layout_name(layouts[j]) + " is not in guard.layouts [" +
                    join_capped(names) + "]: calls of that layout fall back to the reference, so the "
                    "launch never runs for them; add it to guard.layouts or remove it here");
      }
    }
  }

  /// More bytes than any GPU holds (2^48) for `elements` of `dtype`, without overflowing.
  static bool workspace_too_big(int64_t elements, DType dtype) {
    return elements > kMaxWorkspaceBytes / 8 || elements * static_cast<int64_t>(dtype_size(dtype)) > kMaxWorkspaceBytes;
  }

  /// Evaluates `e` where it can be judged before any call: a constant is evaluated; an expression
  /// of symbols is tried at a few values, and an error it gives at all of them (a constant divisor
  /// of 0, an overflow) is one it gives always. Reports the error and returns nullopt; returns the
  /// value of a constant.
  std::optional<int64_t> judge(const Expr& e, const std::string& field) {
    if (e.is_constant()) {
      try {
        return e.evaluate({});
      } catch (const Error& err) {
        problem(field, std::string("can never be evaluated: ") + err.what());
        return std::nullopt;
      }
    }
    std::string first;
    for (int64_t v : {int64_t{1}, int64_t{7}, int64_t{1024}}) {
      SymbolValues values;
      for (const auto& s : e.symbols()) values[s] = v;
      values[kDtypeSizeSymbol] = 4;
      try {
        e.evaluate(values);
        return std::nullopt;  // it evaluates for some call
      } catch (const Error& err) {
        if (first.empty()) first = err.what();
      }
    }
    problem(field, "fails for every value tried (symbols at 1, 7 and 1024): " + first);
    return std::nullopt;
  }

  /// Launch settings that can never run: CUDA's limits on grid, block and shared memory, checked
  /// for constants, and expressions that cannot be evaluated for any call.
  void check_launch_settings(const Launch& launch, const std::string& field) {
    for (std::size_t d = 0; d < launch.grid.size() && d < 3; ++d)
      if (auto v = judge(launch.grid[d], at(sub(field, "grid"), d)); v && (*v < 1 || *v > cuda_limits::kGrid[d]))
        problem(at(sub(field, "grid"), d), std::string("a grid's ") + cuda_limits::kAxis[d] + " size is 1 to " +
                                               std::to_string(cuda_limits::kGrid[d]) + "; found " +
                                               std::to_string(*v));
    // Each axis within its limit, then (when every axis is a constant) the threads of the block.
    int64_t threads = 1;
    bool all_constant = true;
    for (std::size_t d = 0; d < launch.block.size() && d < 3; ++d) {
      const auto v = judge(launch.block[d], at(sub(field, "block"), d));
      if (!v) {
        all_constant = false;
      } else if (*v < 1 || *v > cuda_limits::kBlock[d]) {
        problem(at(sub(field, "block"), d), std::string("a block's ") + cuda_limits::kAxis[d] + " size is 1 to " +
                                                std::to_string(cuda_limits::kBlock[d]) + "; found " +
                                                std::to_string(*v));
        all_constant = false;
      } else {
        threads *= *v;  // at most 1024 * 1024 * 64: no overflow
      }
    }
    if (all_constant && !launch.block.empty() && threads > cuda_limits::kThreadsPerBlock)
      problem(sub(field, "block"), "a block has 1 to " + std::to_string(cuda_limits::kThreadsPerBlock) +
                                       " threads; found " + std::to_string(threads));
    if (auto v = judge(launch.shared_mem, sub(field, "shared_mem"));
        v && (*v < 0 || *v > cuda_limits::kSharedPerBlockMax))
      problem(sub(field, "shared_mem"),
              "dynamic shared memory is 0 to " + std::to_string(cuda_limits::kSharedPerBlockMax) +
                  " bytes (227 KiB, the most any supported GPU gives a block); found " +
                  std::to_string(*v));
    if (launch.max_dynamic_shared_mem) {
      const std::string f = sub(field, "max_dynamic_shared_mem");
      const auto limit = judge(*launch.max_dynamic_shared_mem, f);
      if (limit && (*limit < 0 || *limit > cuda_limits::kSharedPerBlockMax))
        problem(f, "a dynamic shared memory limit is 0 to " + std::to_string(cuda_limits::kSharedPerBlockMax) + " bytes; found " +
                       std::to_string(*limit));
      else if (const auto used = launch.shared_mem.is_constant() ? judge(launch.shared_mem, sub(field, "shared_mem"))
                                                                 : std::nullopt;
               limit && used && *used > *limit)
        problem(f, "is " + std::to_string(*limit) + " bytes, below the launch's shared_mem of " + std::to_string(*used) +
                       ": the launch fails in the kernel's own host code too; raise the limit or lower shared_mem");
    }
    if (!launch.cluster.empty()) {
      // A cluster's blocks: the portable size at most (more needs a non-portable opt-in).
      int64_t blocks = 1;
      bool constant = true;
      for (std::size_t d = 0; d < launch.cluster.size() && d < 3; ++d) {
        const auto v = judge(launch.cluster[d], at(sub(field, "cluster"), d));
        if (!v) {
          constant = false;
        } else if (*v < 1 || *v > cuda_limits::kClusterBlocks) {
          problem(at(sub(field, "cluster"), d), std::string("a cluster's ") + cuda_limits::kAxis[d] + " size is 1 to " +
                                                    std::to_string(cuda_limits::kClusterBlocks) + "; found " +
                                                    std::to_string(*v));
          constant = false;
        } else {
          blocks *= *v;
        }
      }
      if (constant && blocks > cuda_limits::kClusterBlocks)
        problem(sub(field, "cluster"), "a cluster holds at most " + std::to_string(cuda_limits::kClusterBlocks) +
                                           " blocks (the portable size); found " + std::to_string(blocks));
    }
    if (launch.when.if_expr) judge(*launch.when.if_expr, sub(sub(field, "when"), "if"));
    // CUDA's kernel parameter space (32,764 bytes since CUDA 12.1 on Volta and later).
    std::size_t bytes = 0;
    for (const auto& a : launch.args) bytes += argument_bytes(a);
    if (bytes > cuda_limits::kParameterBytes)
      problem(sub(field, "args"), std::to_string(launch.args.size()) + " arguments take " +
                                      std::to_string(bytes) + " bytes; a kernel's parameters may "
                                      "take at most " + std::to_string(cuda_limits::kParameterBytes));
  }

  static std::size_t argument_bytes(const KernelArg& a) {
    switch (a.kind) {
      case KernelArg::Kind::tensor:
      case KernelArg::Kind::workspace: return 8;
      default: break;
    }
    switch (a.type) {
      case ScalarType::i32:
      case ScalarType::u32:
      case ScalarType::f32: return 4;
      default: return 8;
    }
  }

  void check_guard(const json& doc) {
    auto g = doc.find("guard");
    if (g == doc.end() || !g->is_object()) return;  // the schema said
    check_shapes(*g);
    if (auto it = g->find("layouts"); it != g->end())
      m_.guard.layouts = layouts_at(*it);
    check_variants(*g);
    if (auto it = g->find("require"); it != g->end()) {
      if (it->is_array() && !it->empty() && it->size() <= kMaxRequire) {  // else the schema said
        for (std::size_t i = 0; i < it->size(); ++i) {
          const std::string f = at("guard.require", i);
          if (!(*it)[i].is_string()) continue;  // the schema said
          auto e = expr_at(f, (*it)[i], true);
          if (!e) continue;
          if (reads_device(*e)) {
            problem(f, "\"" + e->text() + "\" reads a device property: the guard says where the package may be "
                           "used, on any GPU; a launch's \"when\": {\"if\": ...} picks launches per device");
            continue;
          }
          if (e->is_constant()) {
            if (const auto v = judge(*e, f))
              problem(f, "\"" + e->text() + "\" names no symbol, so it is always " +
                             (*v != 0 ? "true: remove it" : "false: nothing would be inside the guard"));
          } else {
            judge(*e, f);
            m_.guard.require.push_back(std::move(*e));
          }
        }
      }
    }
    if (auto it = g->find("unmatched"); it != g->end()) m_.guard.unmatched_fallback = *it == "fallback";
  }

  /// The integer at `key` when it is one, at least `min` and an int64 (the schema said what else).
  static std::optional<int64_t> int_at(const json& obj, const std::string& key, int64_t min) {
    auto it = obj.find(key);
    if (it == obj.end() || !it->is_number_integer()) return std::nullopt;
    if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return std::nullopt;
    const int64_t v = it->get<int64_t>();
    return v >= min ? std::optional<int64_t>(v) : std::nullopt;
  }

  void check_shapes(const json& g) {
    auto it = g.find("shapes");
    if (it == g.end()) return;
    if (!it->is_object()) return;  // the schema said
    for (const auto& item : it->items()) {
      const std::string field = sub("guard.shapes", item.key());
      if (!is_symbol(item.key())) {
        problem(field, "unknown symbol " + quote_untrusted(item.key()) +
                           "; expected one of \"symbols\": " + symbol_list());
        continue;
      }
      const json& r = item.value();
      if (!r.is_object()) continue;  // the schema said
      // Either bound may be left out: it is then the op's (the symbol's domain), as is the other.
      int64_t domain_lo = 0, domain_hi = std::numeric_limits<int64_t>::max() / 4;
      if (op_)
        for (const auto& d : op_->symbols)
          if (d.name == item.key()) {
            domain_lo = d.min;
            domain_hi = d.max;
          }
      auto lo = r.contains("min") ? int_at(r, "min", 0) : std::optional<int64_t>(domain_lo);
      auto hi = r.contains("max") ? int_at(r, "max", 0) : std::optional<int64_t>(domain_hi);
      auto mult = int_at(r, "multiple_of", 1);
      if (!lo || !hi) continue;
      if (*lo > *hi) {
        problem(field, "min " + std::to_string(*lo) + " is greater than max " +
                           std::to_string(*hi) + "; expected min <= max");
        continue;
      }
      m_.guard.shapes[item.key()] = {*lo, *hi, mult.value_or(1)};
    }
  }

  void check_variants(const json& g) {
    auto it = g.find("variants");
    if (it == g.end()) return;
    if (!it->is_array()) return;  // the schema said
    if (it->size() > kMaxVariants) {
      problem("guard.variants", "lists " + std::to_string(it->size()) + " variants; expected at most " +
                                    std::to_string(kMaxVariants));
      return;
    }
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& v = (*it)[i];
      const std::string field = at("guard.variants", i);
      if (!v.is_object()) continue;  // the schema said
      Variant var;
      bool ok = true;
      auto dims = v.find("dims");
      if (dims == v.end() || !dims->is_object()) {
        ok = false;  // the schema said
      } else {
        for (const auto& d : dims->items()) {
          const std::string f = sub(sub(field, "dims"), d.key());
          if (!is_symbol(d.key())) {
            problem(f, "unknown symbol " + quote_untrusted(d.key()) +
                           "; expected one of \"symbols\": " + symbol_list());
            ok = false;
            continue;
          }
          if (!d.value().is_number_integer() || d.value().get<int64_t>() < 0) {
            ok = false;  // the schema said
            continue;
          }
          const int64_t x = d.value().get<int64_t>();
          auto r = m_.guard.shapes.find(d.key());
          if (r != m_.guard.shapes.end() && (x < r->second.min || x > r->second.max)) {
            problem(f, std::to_string(x) + " is outside guard.shapes." + d.key() + " [" +
                           std::to_string(r->second.min) + ", " + std::to_string(r->second.max) +
                           "]");
            ok = false;
            continue;
          }
          if (r != m_.guard.shapes.end() && x % r->second.multiple_of != 0) {
            problem(f, std::to_string(x) + " is not a multiple of " +
                           std::to_string(r->second.multiple_of) + " (guard.shapes." + d.key() +
                           ".multiple_of)");
            ok = false;
            continue;
          }
          var.dims[d.key()] = x;
        }
        // A captured call has a value for every symbol.
        std::vector<std::string> missing;
        for (const auto& name : declared_symbols_)
          if (!dims->contains(name)) missing.push_back(name);
        if (!missing.empty()) {
          problem(sub(field, "dims"), "no value for " + join_capped(missing) +
                                          "; expected a value for every symbol: " + symbol_list());
          ok = false;
        }
      }
      if (auto d = v.find("dtype"); d == v.end()) {
        ok = false;  // the schema said
      } else if (auto dt = dtype_at(sub(field, "dtype"), *d, true)) {
        if (std::find(m_.guard.dtypes.begin(), m_.guard.dtypes.end(), *dt) ==
            m_.guard.dtypes.end()) {
          problem(sub(field, "dtype"),
                  "dtype " + quote_untrusted(dtype_name(*dt)) + " is not in guard.dtypes");
          ok = false;
        }
        var.dtype = *dt;
      } else {
        ok = false;
      }
      // A call count of a captured workload; the sum over every variant stays far inside int64.
      if (auto c = int_at(v, "calls", 1); c && *c <= kMaxVariantCalls)  // (the schema's bounds)
        var.calls = *c;
      else
        ok = false;
      if (ok) m_.guard.variants.push_back(std::move(var));
    }
  }

  /// Launch settings at the largest call the guard admits (each shape symbol at its guard.shapes
  /// max, else the op's): an expression that overflows int64 there, a grid axis past CUDA's limit or
  /// more shared memory than a block gets would fail such calls at run time, so each is refused
  /// here. A launch whose `when.if` excludes that call, and expressions of other symbols
  /// (strides), are not judged.
  void check_launches_at_largest_call() {
    if (!op_ || launches_incomplete_ || op_->symbols.empty()) return;
    SymbolValues largest;
    std::string shape;
    for (const auto& s : op_->symbols) {
      int64_t v = s.max;
      if (auto it = m_.guard.shapes.find(s.name); it != m_.guard.shapes.end() && it->second.max > 0)
        v = std::min(v, it->second.max);
      largest[s.name] = v;
      shape += (shape.empty() ? "" : ", ") + s.name + "=" + std::to_string(v);
    }
    for (const auto& [name, value] : op_->attributes)
      if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 9e15)
        largest.emplace(name, static_cast<int64_t>(value));
    largest[kDtypeSizeSymbol] = 8;
    // A call that guard.require leaves out is not admitted: nothing to judge there.
    for (const auto& r : m_.guard.require) {
      try {
        if (r.evaluate(largest) == 0) return;
      } catch (const Error&) {
        return;  // names tensor symbols, or does not evaluate there
      }
    }
    const std::string where = " at the largest call the guard admits (" + shape + ")";
    for (const auto& l : m_.launches) {
      bool failed = false;
      const auto value = [&](const Expr& e, const std::string& field) -> std::optional<int64_t> {
        if (e.is_constant()) return std::nullopt;  // judged on its own (check_launch_settings)
        for (const auto& s : e.symbols())
          if (!largest.count(s)) return std::nullopt;
        try {
          return e.evaluate(largest);
        } catch (const Error& err) {
          problem(field, "\"" + e.text() + "\" cannot be evaluated" + where + ": " + err.what() +
                             "; bound the symbols in guard.shapes (\"max\") or compute in smaller steps");
          failed = true;
          return std::nullopt;
        }
      };
      // A launch chosen per device is judged per device (kgate validate's --device-props).
      if (l.when.if_expr && reads_device(*l.when.if_expr)) continue;
      if (l.when.if_expr) {
        const auto runs = value(*l.when.if_expr, sub(sub(l.field, "when"), "if"));
        if (failed || (runs && *runs == 0)) continue;
      }
      for (std::size_t d = 0; d < l.grid.size() && d < 3; ++d)
        if (const auto v = value(l.grid[d], at(sub(l.field, "grid"), d)); v && *v > cuda_limits::kGrid[d])
          problem(at(sub(l.field, "grid"), d),
                  "\"" + l.grid[d].text() + "\" is " + std::to_string(*v) + where + ", past CUDA's " + cuda_limits::kAxis[d] +
                      "-grid limit of " + std::to_string(cuda_limits::kGrid[d]) + "; bound the symbols in guard.shapes" +
                      (d == 0 ? ", or give each block more work" : ", or put the large count on the x axis"));
      for (std::size_t d = 0; d < l.block.size() && d < 3; ++d) value(l.block[d], at(sub(l.field, "block"), d));
      if (const auto v = value(l.shared_mem, sub(l.field, "shared_mem")); v && *v > cuda_limits::kSharedPerBlockMax)
        problem(sub(l.field, "shared_mem"), "\"" + l.shared_mem.text() + "\" is " + std::to_string(*v) + " bytes" + where +
                                                "; a block gets at most " + std::to_string(cuda_limits::kSharedPerBlockMax) +
                                                ": bound the symbols in guard.shapes");
    }
    // Workspaces whose size depends on the call: their bytes at that largest call.
    for (std::size_t i = 0; i < m_.workspace.size(); ++i) {
      const Workspace& ws = m_.workspace[i];
      const std::string field = at(std::string("workspace"), i) + ".shape";
      int64_t elements = 1;
      bool known = true, depends = false;
      for (std::size_t d = 0; d < ws.shape.size() && known; ++d) {
        const Expr& e = ws.shape[d];
        depends = depends || !e.is_constant();
        for (const auto& s : e.symbols()) known = known && largest.count(s) > 0;
        if (!known) break;
        try {
          const int64_t v = e.evaluate(largest);
          if (v > 0 && __builtin_mul_overflow(elements, v, &elements)) elements = std::numeric_limits<int64_t>::max();
        } catch (const Error& err) {
          problem(at(field, d), "\"" + e.text() + "\" cannot be evaluated" + where + ": " + err.what() +
                                    "; bound the symbols in guard.shapes (\"max\")");
          known = false;
        }
      }
      if (known && depends && workspace_too_big(elements, ws.dtype))
        problem(field, "the workspace would take more than 2^48 bytes (256 TiB)" + where +
                           ", more than any GPU holds: bound the symbols in guard.shapes");
    }
  }

  void check_outputs_bound() {
    if (!op_ || launches_incomplete_) return;
    std::set<std::string> passed;
    for (const auto& l : m_.launches)
      for (const auto& a : l.args)
        if (a.kind == KernelArg::Kind::tensor) passed.insert(a.name);
    for (const auto& t : op_->outputs)
      if (!passed.count(t.name))
        problem("launches", "output " + quote_untrusted(t.name) + " of op " + quote_untrusted(m_.op) +
                                " is never passed to a kernel; expected {\"tensor\": " +
                                quote_untrusted(t.name) + "} in some launch's args");
  }

  bool is_symbol(const std::string& name) const {
    return std::find(declared_symbols_.begin(), declared_symbols_.end(), name) !=
           declared_symbols_.end();
  }

  std::string symbol_list() const {
    return declared_symbols_.empty() ? "(none declared)" : join_capped(declared_symbols_);
  }

  const ManifestCheckOptions& options_;
  PackageManifest& m_;
  fs::path package_dir_;
  std::string file_;
  const OpSignature* op_ = nullptr;
  std::set<std::string, std::less<>> known_symbols_;  ///< symbols and integer attributes
  std::vector<std::string> declared_symbols_;
  std::size_t dropped_problems_ = 0;
  std::set<std::string> workspace_names_;
  std::vector<ManifestProblem> problems_;
  std::vector<SchemaProblem> schema_problems_;
  /// Some launch could not be read at all (a bad for_each): checks over every launch are skipped.
  bool launches_incomplete_ = false;
};

}  // namespace

std::vector<ManifestProblem> check_manifest(const fs::path& package_dir,
                                            const ManifestCheckOptions& options,
                                            PackageManifest* out) {
  PackageManifest local;
  PackageManifest& m = out ? *out : local;
  m = PackageManifest{};
  return Checker(package_dir, options, m).run();
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
