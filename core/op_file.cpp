// Reading and checking op files (kgate-op/1).
#include "core/op_file.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/expr.hpp"
#include "core/safe_text.hpp"
#include "core/schema_check.hpp"
#include "core/strict_json.hpp"

namespace kgate {
namespace fs = std::filesystem;
using json = nlohmann::json;

const std::vector<std::string>& value_draw_kinds() {
  static const std::vector<std::string> kinds = {"case",        "norm",     "normal", "uniform",
                                                 "positive",    "integers", "sorted", "simplex",
                                                 "permutation", "mask"};
  return kinds;
}

namespace {

constexpr size_t kMaxProblems = 100;

using package::is_identifier;

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  void problem(const std::string& field, const std::string& message) {
    if (problems_.size() < kMaxProblems) problems_.push_back({field, message});
    else ++dropped_;
  }
  bool ok() const { return problems_.empty() && structural_.empty(); }
  /// Whether the schema refused `field` or something inside it: checks of its values are skipped.
  bool refused(const std::string& field) const {
    return std::any_of(structural_.begin(), structural_.end(),
                       [&](const SchemaProblem& p) { return field_within(p.field, field); });
  }

  [[noreturn]] void fail() {
    // The schema's problems first; where a check below says something of the same field, it says
    // more (which symbol is undeclared, why a dtype cannot be a case's).
    std::vector<SchemaProblem> all = unspoken(structural_, problems_);
    all.insert(all.end(), problems_.begin(), problems_.end());
    if (all.size() > kMaxProblems) {
      dropped_ += all.size() - kMaxProblems;
      all.resize(kMaxProblems);
    }
    const size_t count = all.size() + dropped_;
    std::string text = "op file " + path_ + " is invalid (" + std::to_string(count) + " problem" +
                       (count == 1 ? "" : "s") + "):";
    for (const auto& p : all)
      text += "\n  " + path_ + ": " + inline_untrusted(p.field, 200) + ": " + p.message;
    if (dropped_) text += "\n  ... " + std::to_string(dropped_) + " more problems are not listed";
    throw Error(ErrorKind::usage, safe_log_text(text, 64 * 1024));
  }

  void unknown_keys(const json& obj, const std::string& field,
                    const std::vector<std::string>& known) {
    for (const auto& item : obj.items())
      if (std::find(known.begin(), known.end(), item.key()) == known.end())
        problem(
            field.empty() ? item.key() : field + "." + item.key(),
            "unknown key " + quote_untrusted(item.key(), 60) + "; expected one of: " + join(known));
  }

  // Typed getters: the value where it has the type the schema asks for, the fallback otherwise
  // (missing, or refused by the schema).
  static std::string str(const json& obj, const std::string& key, const std::string& fallback) {
    const auto it = obj.find(key);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : fallback;
  }
  static double num(const json& obj, const std::string& key, double fallback) {
    const auto it = obj.find(key);
    return it != obj.end() && it->is_number() && std::isfinite(it->get<double>())
               ? it->get<double>()
               : fallback;
  }
  static int64_t integer(const json& obj, const std::string& key, int64_t fallback) {
    const auto it = obj.find(key);
    return it != obj.end() && it->is_number_integer() && !it->is_number_unsigned()
               ? it->get<int64_t>()
           : it != obj.end() && it->is_number_unsigned() &&
                   it->get<uint64_t>() <= uint64_t{INT64_MAX}
               ? it->get<int64_t>()
               : fallback;
  }
  static bool boolean(const json& obj, const std::string& key, bool fallback) {
    const auto it = obj.find(key);
    return it != obj.end() && it->is_boolean() ? it->get<bool>() : fallback;
  }
  // A TorchScript source: a string, or an array of lines.
  std::string source(const json& obj, const std::string& key) {
    if (!obj.contains(key)) return {};
    const auto& v = obj.at(key);
    if (v.is_string()) return v.get<std::string>();
    if (v.is_array()) {
      std::string text;
      for (size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_string()) {
          problem(key + "[" + std::to_string(i) + "]",
                  "expected a string (one line of TorchScript)");
          return {};
        }
        text += v[i].get<std::string>() + "\n";
      }
      return text;
    }
    problem(key, "expected TorchScript source: a string, or an array of lines");
    return {};
  }

  // An integer expression over the declared symbols; "" when it does not parse.
  bool expression(const std::string& text, const std::string& field,
                  const std::set<std::string, std::less<>>& known) {
    try {
      package::Expr::parse(text).check_symbols(known);
      return true;
    } catch (const Error& e) {
      problem(field, e.what());
      return false;
    }
  }

  OpFile read(const std::string& text) {
    OpFile f;
    f.path = path_;
    OpSignature& op = f.signature;
    op.origin = path_;
    json doc;
    std::string duplicate;
    try {
      doc = parse_strict_json(text, &duplicate);
    } catch (const json::exception& e) {
      problem("(document)", "not valid JSON: " + json_error_text(e));
      fail();
    }
    if (!duplicate.empty()) {
      problem("(document)",
              "the key " + quote_untrusted(duplicate, 60) + " appears twice in one object");
      fail();
    }
    // The structure first (the JSON Schema); the checks below skip what it refused.
    structural_ = SchemaCheck::op_file().problems(doc);
    if (!doc.is_object()) fail();
    const std::string format = str(doc, "format", "");
    if (!format.empty() && format != "kgate-op/1") {
      problem("format", quote_untrusted(format, 40) +
                            " is not an op file format this kgate reads; expected \"kgate-op/1\"");
      fail();
    }
    op.name = str(doc, "name", "");
    op.summary = str(doc, "summary", "");

    // Symbols, in order: the order of a case id's dims.
    std::set<std::string, std::less<>> symbols;
    if (doc.contains("symbols") && doc["symbols"].is_array()) {
      const auto& arr = doc["symbols"];
      for (size_t i = 0; i < arr.size(); ++i) {
        const std::string field = "symbols[" + std::to_string(i) + "]";
        if (!arr[i].is_object()) continue;
        SymbolDomain d;
        d.name = str(arr[i], "name", "");
        if (!d.name.empty() && !symbols.insert(d.name).second)
          problem(field + ".name", "symbol '" + d.name + "' is declared twice");
        if (refused(field)) {
          op.symbols.push_back(d);
          continue;
        }
        d.min = integer(arr[i], "min", 1);
        d.max = integer(arr[i], "max", d.min);
        if (d.max < d.min) problem(field + ".max", "is below min (" + std::to_string(d.min) + ")");
        d.typical_max = integer(arr[i], "typical_max", 0);
        if (d.typical_max != 0 && (d.typical_max < d.min || d.typical_max > d.max))
          problem(field + ".typical_max", "must lie in [min, max]");
        d.multiple_of = integer(arr[i], "multiple_of", 1);
        if (d.multiple_of > 1 &&
            d.max / d.multiple_of * d.multiple_of < std::max<int64_t>(d.min, 1))
          problem(field + ".multiple_of",
                  "no multiple of " + std::to_string(d.multiple_of) + " lies in [min, max]");
        op.symbols.push_back(d);
      }
    }

    if (doc.contains("relations") && doc["relations"].is_array())
      for (size_t i = 0; i < doc["relations"].size(); ++i) {
        const auto& r = doc["relations"][i];
        if (r.is_string() &&
            expression(r.get<std::string>(), "relations[" + std::to_string(i) + "]", symbols))
          op.relations.push_back(r.get<std::string>());
      }

    // dtypes of a case (the floating dtype a case has; tensors declare theirs relative to it).
    if (doc.contains("dtypes") && doc["dtypes"].is_array()) {
      for (size_t i = 0; i < doc["dtypes"].size(); ++i) {
        const std::string field = "dtypes[" + std::to_string(i) + "]";
        try {
          const DType d =
              parse_dtype(doc["dtypes"][i].is_string() ? doc["dtypes"][i].get<std::string>() : "?");
          if (!is_floating(d))
            problem(field,
                    "a case dtype must be floating (f16, bf16, f32, f64); integer tensors take a "
                    "fixed \"dtype\"");
          else if (d == DType::f8e4m3)
            problem(field,
                    "f8e4m3 is not a case dtype (torch computes little in it); give the tensors "
                    "that hold it \"dtype\": \"f8e4m3\"");
          else op.dtypes.push_back(d);
        } catch (const Error& e) {
          problem(field, e.what());
        }
      }
    }

    const auto tensors = [&](const std::string& key, bool inputs) {
      std::vector<TensorSpec> out;
      if (!doc.contains(key) || !doc[key].is_array()) return out;
      std::set<std::string> names;
      for (size_t i = 0; i < doc[key].size(); ++i) {
        const auto& t = doc[key][i];
        const std::string field = key + "[" + std::to_string(i) + "]";
        if (!t.is_object()) continue;
        TensorSpec spec;
        spec.name = str(t, "name", "");
        if (!spec.name.empty() && !names.insert(spec.name).second)
          problem(field + ".name", "tensor '" + spec.name + "' is declared twice");
        if (t.contains("shape") && t["shape"].is_array())
          for (size_t k = 0; k < t["shape"].size(); ++k) {
            const auto& dim = t["shape"][k];
            const std::string text = dim.is_number_integer() ? std::to_string(dim.get<int64_t>())
                                     : dim.is_string()       ? dim.get<std::string>()
                                                             : std::string();
            if (!text.empty() &&
                expression(text, field + ".shape[" + std::to_string(k) + "]", symbols))
              spec.shape.push_back(text);
          }
        const std::string dtype = str(t, "dtype", "case");
        if (dtype != "case") {
          try {
            spec.dtype = dtype_name(parse_dtype(dtype));
          } catch (const Error&) {  // not a dtype: the schema said so
          }
        }
        if (!inputs) {
          spec.index_into = str(t, "index_into", "");
          spec.index_order = str(t, "index_order", "reference");
          if (!spec.index_into.empty() &&
              (spec.dtype.empty() || is_floating(parse_dtype(spec.dtype)) || spec.dtype == "bool"))
            problem(field + ".index_into",
                    "an output holding indices needs an integer \"dtype\" (i64 or i32)");
        }
        if (inputs) {
          spec.keep_dtype_in_oracle = boolean(t, "keep_dtype_in_oracle", false);
          if (t.contains("values")) read_draw(t["values"], field + ".values", spec, symbols);
          else if (!spec.dtype.empty() && !is_floating(parse_dtype(spec.dtype)))
            problem(field + ".values",
                    "an integer tensor needs values, e.g. {\"kind\": \"integers\", \"low\": 0, "
                    "\"high\": \"V-1\"}");
        }
        out.push_back(std::move(spec));
      }
      return out;
    };
    op.inputs = tensors("inputs", true);
    op.outputs = tensors("outputs", false);
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      const auto& o = op.outputs[i];
      if (o.index_into.empty()) continue;
      const std::string field = "outputs[" + std::to_string(i) + "].index_into";
      const auto in = std::find_if(op.inputs.begin(), op.inputs.end(),
                                   [&](const TensorSpec& t) { return t.name == o.index_into; });
      if (in == op.inputs.end()) {
        problem(field, "'" + o.index_into + "' is not an input of the op");
      } else if (in->shape.empty() || in->shape.size() != o.shape.size() ||
                 !std::equal(o.shape.begin(), o.shape.end() - 1, in->shape.begin())) {
        problem(field, "indices select along the last dim of '" + in->name +
                           "': the output needs its rank and every dim but the last (e.g. [\"B\", "
                           "\"K\"] into [\"B\", \"N\"])");
      }
    }
    std::set<std::string> aliased;
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      const std::string field = "outputs[" + std::to_string(i) + "]";
      for (const auto& in : op.inputs)
        if (in.name == op.outputs[i].name)
          problem(field + ".name", "'" + in.name + "' is also an input's name");
      op.outputs[i].alias = str(doc["outputs"][i], "alias", "");
      if (op.outputs[i].alias.empty()) continue;
      const int k = op.alias_input(op.outputs[i]);
      if (k < 0) {
        problem(field + ".alias",
                "'" + op.outputs[i].alias +
                    "' is not an input; an in-place output names the input it is written into");
        continue;
      }
      const auto& in = op.inputs[static_cast<size_t>(k)];
      if (in.shape != op.outputs[i].shape || in.dtype != op.outputs[i].dtype)
        problem(field + ".alias",
                "input '" + in.name +
                    "' has another shape or dtype; an in-place output has its input's");
      if (!aliased.insert(in.name).second)
        problem(field + ".alias",
                "input '" + in.name + "' is already written in place by another output");
    }

    if (doc.contains("attributes") && doc["attributes"].is_object())
      for (const auto& item : doc["attributes"].items()) {
        if (symbols.count(item.key()))
          problem("attributes." + item.key(), "'" + item.key() + "' is also a shape symbol");
        else if (item.value().is_boolean())
          op.attributes[item.key()] = item.value().get<bool>() ? 1 : 0;
        else if (item.value().is_number()) op.attributes[item.key()] = item.value().get<double>();
      }

    op.reduced_symbol = str(doc, "reduced", "");
    if (!op.reduced_symbol.empty() && !symbols.count(op.reduced_symbol))
      problem("reduced", "'" + op.reduced_symbol + "' is not a declared symbol; expected one of: " +
                             join(std::vector<std::string>(symbols.begin(), symbols.end())));

    const std::string nan = str(doc, "nan", "propagate");
    op.nan_contract = nan == "ignore" ? NanContract::ignore : NanContract::propagate;
    if (const auto cond = doc.find("conditioning"); cond != doc.end() && cond->is_object()) {
      const std::string terms = str(*cond, "terms", "");
      if (!terms.empty() && expression(terms, "conditioning.terms", symbols))
        op.conditioning_terms = terms;
      f.magnitude = source(*cond, "magnitude");
      op.accumulate_in_case_dtype = str(*cond, "accumulate", "float32") == "case";
      if (cond->contains("magnitude") && f.magnitude.find("def magnitude") == std::string::npos)
        problem("conditioning.magnitude", "the source defines no function `magnitude`");
    }
    // An op that declares its conditioning is judged by it unless the file names another rule.
    op.default_rule = str(doc, "rule", op.conditioning_terms.empty() ? "allclose" : "conditioned");
    op.deterministic = boolean(doc, "deterministic", true);

    for (DType d : op.dtypes) op.tolerance[d] = assert_close_tolerance(d);
    if (doc.contains("tolerance") && doc["tolerance"].is_object())
      for (const auto& item : doc["tolerance"].items()) {
        DType d;
        try {
          d = parse_dtype(item.key());
        } catch (const Error& e) {
          problem("tolerance." + item.key(), e.what());
          continue;
        }
        Tolerance t = op.tolerance_for(d);
        if (item.value().is_object()) {
          t.atol = num(item.value(), "atol", t.atol);
          t.rtol = num(item.value(), "rtol", t.rtol);
        }
        op.tolerance[d] = t;
      }

    if (doc.contains("tolerance_scale") && doc["tolerance_scale"].is_object()) {
      op.tolerance_scale_symbol = str(doc["tolerance_scale"], "symbol", "");
      op.tolerance_scale_power = num(doc["tolerance_scale"], "power", 0.5);
      if (!op.tolerance_scale_symbol.empty() && !symbols.count(op.tolerance_scale_symbol))
        problem("tolerance_scale.symbol",
                "'" + op.tolerance_scale_symbol + "' is not a declared symbol");
    }

    // A speed shape gives every symbol a value inside its domain (the symbols are the op's own).
    if (doc.contains("speed_shapes") && doc["speed_shapes"].is_array() && !refused("symbols"))
      for (size_t i = 0; i < doc["speed_shapes"].size(); ++i) {
        const auto& s = doc["speed_shapes"][i];
        const std::string field = "speed_shapes[" + std::to_string(i) + "]";
        if (!s.is_object()) continue;
        std::vector<std::pair<std::string, int64_t>> shape;
        for (const auto& d : op.symbols) {
          if (!s.contains(d.name)) {
            problem(field, "gives no value for symbol '" + d.name + "'");
            continue;
          }
          const int64_t x = integer(s, d.name, d.min);
          if (x < d.min || x > d.max)
            problem(field + "." + d.name, std::to_string(x) + " is outside [" +
                                              std::to_string(d.min) + ", " + std::to_string(d.max) +
                                              "], the domain of symbol '" + d.name + "'");
          shape.emplace_back(d.name, x);
        }
        unknown_keys(s, field, std::vector<std::string>(symbols.begin(), symbols.end()));
        op.speed_shapes.push_back(std::move(shape));
      }

    // Speed of light: expressions over the shape symbols, dtype_size and bytes_<tensor> (the
    // schema checked the object's shape).
    if (const auto m = doc.find("min_bytes"); m != doc.end() && m->is_object()) {
      std::set<std::string, std::less<>> known = symbols;
      known.insert("dtype_size");
      for (const auto* list : {&op.inputs, &op.outputs})
        for (const auto& t : *list) known.insert("bytes_" + t.name);
      for (const char* key : {"read", "written"}) {
        const std::string text = str(*m, key, "");
        if (!text.empty() && expression(text, std::string("min_bytes.") + key, known))
          (std::string(key) == "read" ? op.min_bytes_read : op.min_bytes_written) = text;
      }
    }

    f.reference = source(doc, "reference");
    if (doc.contains("reference") && f.reference.find("def reference") == std::string::npos)
      problem("reference", "the source defines no function `reference`");
    f.oracle = source(doc, "oracle");
    if (doc.contains("oracle") && f.oracle.find("def oracle") == std::string::npos)
      problem("oracle", "the source defines no function `oracle`");
    if (f.reference.size() + f.oracle.size() + f.magnitude.size() > 64 * 1024)
      problem("reference", "at most 64 KiB of TorchScript");
    if (!ok()) fail();
    return f;
  }

 private:
  void read_draw(const json& v, const std::string& field, TensorSpec& spec,
                 const std::set<std::string, std::less<>>& symbols) {
    ValueDraw& d = spec.values;
    d.kind = str(v, "kind", "case");
    const auto& kinds = value_draw_kinds();
    if (!v.is_object() || std::find(kinds.begin(), kinds.end(), d.kind) == kinds.end())
      return;  // the schema said
    static const std::map<std::string, std::vector<std::string>> keys = {
        {"case", {"kind", "extreme", "seed_from"}},
        {"norm", {"kind", "extreme", "mean_to_spread", "zero_constant", "seed_from"}},
        {"normal", {"kind", "mean", "std", "seed_from"}},
        {"uniform", {"kind", "low", "high", "seed_from"}},
        {"positive", {"kind", "low", "extreme", "seed_from"}},
        {"integers", {"kind", "low", "high", "edges", "seed_from"}},
        {"sorted", {"kind", "extreme", "seed_from"}},
        {"simplex", {"kind", "seed_from"}},
        {"permutation", {"kind", "seed_from"}},
        {"mask", {"kind", "p", "seed_from"}}};
    unknown_keys(v, field, keys.at(d.kind));
    d.seed_from = str(v, "seed_from", "");
    d.extreme = num(v, "extreme", 0);
    d.mean = num(v, "mean", 0);
    d.std = num(v, "std", 1);
    d.mean_to_spread = num(v, "mean_to_spread", 16);
    d.zero_constant = boolean(v, "zero_constant", false);
    d.p = num(v, "p", 0.5);
    d.edges = boolean(v, "edges", true);
    const bool integer_tensor = !spec.dtype.empty() && !is_floating(parse_dtype(spec.dtype));
    if (d.kind == "integers" || d.kind == "permutation") {
      if (!integer_tensor)
        problem(field + ".kind",
                "'" + d.kind + "' values need an integer \"dtype\" (i64, i32, i8, u8)");
    } else if (integer_tensor && d.kind != "mask") {
      problem(field + ".kind", "an integer tensor takes integers, permutation or mask values");
    }
    if (d.kind == "integers") {
      for (const char* key : {"low", "high"}) {
        const std::string kfield = field + "." + key;
        if (!v.contains(key)) {
          problem(kfield, "required: an integer or an expression of the symbols, such as \"V-1\"");
          continue;
        }
        const auto& b = v.at(key);
        const std::string text = b.is_number_integer() ? std::to_string(b.get<int64_t>())
                                 : b.is_string()       ? b.get<std::string>()
                                                       : std::string();
        if (text.empty()) problem(kfield, "expected an integer or an expression");
        else if (expression(text, kfield, symbols))
          (std::string(key) == "low" ? d.low_expr : d.high_expr) = text;
      }
    } else {
      d.low = num(v, "low", d.kind == "positive" ? 0.0 : 0.0);
      d.high = num(v, "high", 1.0);
      if (d.kind == "uniform" && !(d.high > d.low)) problem(field + ".high", "must be above low");
    }
  }

  std::string path_;
  std::vector<SchemaProblem> problems_;
  std::vector<SchemaProblem> structural_;
  size_t dropped_ = 0;
};

}  // namespace

OpFile parse_op_file(const std::string& text, const std::string& path) {
  OpFile f = Reader(path).read(text);
  f.text = text;
  return f;
}

OpFile read_op_file(const std::string& path) {
  std::error_code ec;
  const auto status = fs::symlink_status(path, ec);
  if (ec || !fs::exists(status)) throw_usage("op file " + path + " does not exist");
  if (!fs::is_regular_file(fs::status(path, ec)))
    throw_usage("op file " + path + " is not a regular file");
  const auto size = fs::file_size(path, ec);
  if (ec || size > kMaxOpFileBytes)
    throw_usage("op file " + path + " has " + std::to_string(size) + " bytes; at most " +
                std::to_string(kMaxOpFileBytes) + " are read");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_usage("op file " + path + " cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_op_file(ss.str(), path);
}

namespace {

// Collects the paths (a.b[2].c) where two parsed op files differ, up to `cap` of them.
void differences(const json& a, const json& b, const std::string& path,
                 std::vector<std::string>& out, size_t cap) {
  if (out.size() >= cap) return;
  const auto here = [&](const std::string& key) { return path.empty() ? key : path + "." + key; };
  if (a.is_object() && b.is_object()) {
    std::set<std::string> keys;
    for (const auto& [k, v] : a.items()) keys.insert(k);
    for (const auto& [k, v] : b.items()) keys.insert(k);
    for (const auto& k : keys) {
      if (path.empty() && (k == "summary" || k == "description" || k == "$schema")) continue;
      if (!a.contains(k) || !b.contains(k)) {
        if (out.size() < cap) out.push_back(here(k));
      } else {
        differences(a.at(k), b.at(k), here(k), out, cap);
      }
    }
    return;
  }
  if (a.is_array() && b.is_array() && a.size() == b.size()) {
    for (size_t i = 0; i < a.size(); ++i)
      differences(a[i], b[i], path + "[" + std::to_string(i) + "]", out, cap);
    return;
  }
  // Numbers compare by value: 0.001 and 1e-3 are one tolerance.
  if (a.is_number() && b.is_number() && a.get<double>() == b.get<double>()) return;
  if (a != b) out.push_back(path.empty() ? "(document)" : path);
}

}  // namespace

std::vector<std::string> op_file_differences(const std::string& a, const std::string& b) {
  if (a == b) return {};
  json ja, jb;
  try {
    std::string duplicate;
    ja = parse_strict_json(a, &duplicate);
    jb = parse_strict_json(b, &duplicate);
  } catch (const std::exception&) {
    return {"(document)"};
  }
  std::vector<std::string> out;
  differences(ja, jb, "", out, 20);
  return out;
}

std::vector<std::string> op_file_paths(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return {path};
  if (!fs::is_directory(path, ec))
    throw_usage("--ops " + path +
                ": no such file or directory (expected an op file or a directory of them)");
  // A kernel package's directory: its op file, named by its manifest.
  if (fs::is_regular_file(fs::path(path) / "kgate.json", ec)) {
    const fs::path manifest = fs::path(path) / "kgate.json";
    json doc;
    try {
      std::ifstream in(manifest, std::ios::binary);
      std::string text(kMaxOpFileBytes + 1, '\0');
      in.read(text.data(), static_cast<std::streamsize>(text.size()));
      text.resize(static_cast<size_t>(in.gcount()));
      std::string duplicate;
      doc = parse_strict_json(text, &duplicate);
    } catch (const std::exception& e) {
      throw_usage("--ops " + path + ": a kernel package, but its kgate.json could not be read: " +
                  e.what() + " (`kgate validate " + path + "` says more)");
    }
    const auto op_file = doc.is_object() ? doc.find("op_file") : doc.end();
    if (!doc.is_object() || op_file == doc.end() || !op_file->is_string())
      throw_usage("--ops " + path + ": a kernel package whose op" +
                  (doc.is_object() && doc.contains("op") && doc["op"].is_string()
                       ? " '" + doc["op"].get<std::string>() + "'"
                       : std::string()) +
                  " kgate builds in (its kgate.json names no op_file): give the package with "
                  "--package, not --ops");
    const fs::path rel = op_file->get<std::string>();
    const fs::path file = fs::weakly_canonical(fs::path(path) / rel, ec);
    const fs::path dir = fs::weakly_canonical(path, ec);
    const auto inside =
        std::mismatch(dir.begin(), dir.end(), file.begin(), file.end()).first == dir.end();
    if (rel.is_absolute() || !inside || !fs::is_regular_file(file, ec))
      throw_usage("--ops " + path + ": its kgate.json names op_file '" +
                  inline_untrusted(rel.string(), 200) +
                  "', which is not a file inside the package (`kgate validate " + path +
                  "` says more)");
    return {(fs::path(path) / rel).string()};
  }
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(path, ec))
    if (e.path().extension() == ".json" && e.is_regular_file(ec) &&
        e.path().filename() != "kgate-pack.json")
      out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  if (out.empty()) throw_usage("--ops " + path + ": the directory holds no *.json op file");
  return out;
}

}  // namespace kgate
