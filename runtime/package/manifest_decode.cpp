// The one walk over kgate.json's JSON: the schema-checked document decoded into a ManifestSource,
// each value with its field path. What the schema refused is left out here, silently (its problem
// is reported already); each such skip is marked "(the schema)". A launch's launch_defaults and
// for_each are applied here too, so the checks see one source per launch that runs.
#include <algorithm>
#include <limits>
#include <map>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "core/expr.hpp"
#include "core/schema_check.hpp"
#include "runtime/package/manifest_source.hpp"

namespace kgate::package::source {
namespace {

using json = nlohmann::json;

const std::vector<std::string> kLaunchDefaultKeys = {
    "kernel",   "grid",   "block",         "shared_mem",
    "args",     "when",   "nvrtc_options", "max_dynamic_shared_mem",
    "carveout", "cluster"};
const std::vector<std::string> kArgKinds = {"tensor",    "workspace", "shape",
                                            "attribute", "scalar",    "stride"};

Value value(const json& v, const std::string& field) {
  Value out;
  out.field = field;
  out.found = describe_json(v);
  out.dump = v.dump();
  switch (v.type()) {
    case json::value_t::boolean:
      out.type = Value::Type::boolean, out.boolean = v.get<bool>();
      break;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      out.type = Value::Type::integer;
      out.integer = v.get<int64_t>();
      out.is_unsigned = v.is_number_unsigned();
      if (out.is_unsigned) out.unsigned_value = v.get<uint64_t>();
      out.number = v.get<double>();
      break;
    case json::value_t::number_float:
      out.type = Value::Type::number, out.number = v.get<double>();
      break;
    case json::value_t::string:
      out.type = Value::Type::string, out.text = v.get<std::string>();
      break;
    case json::value_t::array:
      out.type = Value::Type::array;
      break;
    case json::value_t::object:
      out.type = Value::Type::object;
      break;
    default:
      break;
  }
  return out;
}

std::optional<Value> value_at(const json& obj, const std::string& key, const std::string& field) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  return value(*it, field);
}

std::optional<std::string> string_at(const json& obj, const std::string& key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

/// The integer at `key` when it is one, at least `min` and an int64 (else the schema).
std::optional<int64_t> int_at(const json& obj, const std::string& key, int64_t min) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_integer()) return std::nullopt;
  if (it->is_number_unsigned() &&
      it->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return std::nullopt;
  const int64_t v = it->get<int64_t>();
  return v >= min ? std::optional<int64_t>(v) : std::nullopt;
}

std::optional<ScalarType> parse_scalar_type(const std::string& s) {
  for (ScalarType t : {ScalarType::i32, ScalarType::i64, ScalarType::u32, ScalarType::u64,
                       ScalarType::f32, ScalarType::f64})
    if (s == scalar_type_name(t)) return t;
  return std::nullopt;
}

/// A layout list: the valid names of an array (anything else: the schema).
std::vector<Layout> layouts(const json& v) {
  std::vector<Layout> out;
  if (!v.is_array()) return out;
  for (const json& e : v)
    for (Layout l : {Layout::contiguous, Layout::strided, Layout::offset})
      if (e.is_string() && e.get<std::string>() == layout_name(l)) out.push_back(l);
  return out;
}

/// The strings of an array, each with its field (other entries: the schema).
std::vector<Value> strings(const json& v, const std::string& field) {
  std::vector<Value> out;
  for (std::size_t i = 0; v.is_array() && i < v.size(); ++i)
    if (v[i].is_string()) out.push_back(value(v[i], at(field, i)));
  return out;
}

/// An NVRTC option list (an array of at most kMaxOptions; else the schema).
std::vector<Value> options(const json& v, const std::string& field) {
  if (!v.is_array() || v.size() > kMaxOptions) return {};
  return strings(v, field);
}

PathList paths(const json& doc, const std::string& key) {
  PathList out;
  out.key = key;
  auto it = doc.find(key);
  if (it == doc.end() || !it->is_array()) return out;
  out.count = it->size();
  std::set<std::string> seen;
  for (auto& v : strings(*it, key))
    if (seen.insert(v.text).second) out.paths.push_back(std::move(v));  // (the schema: uniqueItems)
  return out;
}

ExprList expr_list(const json& obj, const std::string& field, const std::string& key) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  std::vector<ExprSource> out;
  for (std::size_t i = 0; it->is_array() && i < it->size(); ++i)
    out.push_back(value((*it)[i], at(sub(field, key), i)));
  return out;
}

std::optional<SymbolSource::Binding> binding(const json& v, const std::string& field) {
  if (!v.is_array() || v.size() != 2 || !v[1].is_number_integer()) return std::nullopt;
  return SymbolSource::Binding{value(v[0], at(field, 0)), value(v[1], at(field, 1))};
}

void decode_attributes(const json& doc, ManifestSource& s) {
  auto it = doc.find("attributes");
  if (it == doc.end() || !it->is_object()) return;
  for (const auto& item : it->items())
    if (is_identifier(item.key()) && item.value().is_number())
      s.attributes.push_back({item.key(), value(item.value(), sub("attributes", item.key()))});
}

/// "cubin": {"sm_90": "k.cubin"} of the package or of a launch (`field` its place, "" the top).
std::vector<BinarySource> binaries(const json& obj, const std::string& field) {
  std::vector<BinarySource> out;
  if (auto it = obj.find("cubin"); it != obj.end() && it->is_object()) {
    static const std::regex arch_re("sm_[0-9]{2,3}[af]?");
    for (auto e = it->begin(); e != it->end(); ++e)
      if (e.key().size() <= 8 && std::regex_match(e.key(), arch_re) && e->is_string())
        out.push_back({e.key(), value(*e, sub(sub(field, "cubin"), e.key()))});
  }
  return out;
}

void decode_binaries(const json& doc, ManifestSource& s) {
  s.cubins = binaries(doc, "");
  if (auto it = doc.find("fatbin"); it != doc.end() && it->is_string())
    s.fatbin = value(*it, "fatbin");
  if (auto it = doc.find("ptx"); it != doc.end() && it->is_string()) s.ptx = value(*it, "ptx");
  if (auto it = doc.find("build"); it != doc.end() && it->is_object())
    if (auto c = it->find("compiler"); c != it->end() && c->is_string())
      s.build_compiler = value(*c, "build.compiler");
}

void decode_symbols(const json& doc, ManifestSource& s) {
  auto it = doc.find("symbols");
  if (it == doc.end() || !it->is_object()) return;
  for (const auto& item : it->items()) {
    if (!is_identifier(item.key())) continue;
    SymbolSource sym{item.key(), sub("symbols", item.key()), std::nullopt};
    sym.binding = binding(item.value(), sym.field);
    s.symbols.push_back(std::move(sym));
  }
}

void decode_workspace(const json& doc, ManifestSource& s) {
  auto it = doc.find("workspace");
  if (it == doc.end() || !it->is_array()) return;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& w = (*it)[i];
    if (!w.is_object()) continue;
    WorkspaceSource ws;
    ws.field = at("workspace", i);
    ws.name = string_at(w, "name");
    ws.dtype = value_at(w, "dtype", sub(ws.field, "dtype"));
    ws.shape = expr_list(w, ws.field, "shape");
    ws.zero = value_at(w, "zero", sub(ws.field, "zero"));
    ws.start = value_at(w, "start", sub(ws.field, "start"));
    s.workspace.push_back(std::move(ws));
  }
}

void decode_outputs(const json& doc, ManifestSource& s) {
  auto it = doc.find("outputs");
  if (it == doc.end() || !it->is_object()) return;
  for (const auto& [name, spec] : it->items()) {
    if (!spec.is_object() || !spec.contains("start")) continue;
    const json& v = spec.at("start");
    std::optional<double> start;
    if (v.is_number()) start = v.get<double>();
    if (v == "inf") start = std::numeric_limits<double>::infinity();
    if (v == "-inf") start = -std::numeric_limits<double>::infinity();
    if (start) s.outputs.push_back({name, sub("outputs", name), *start});
  }
}

/// Replaces every "{NAME}" of `bindings` in the strings of `v` (keys stay).
json substitute(const json& v, const std::map<std::string, int64_t>& bindings) {
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

/// The bindings a launch's "for_each" lists: {"VPT": [1, 2, 4]} (every combination of the lists,
/// in order) or [{"VPT": 1, "LO": 0}, {"VPT": 2, "LO": 32}]. Empty when it is not usable (the
/// schema, or a problem recorded here).
std::vector<std::map<std::string, int64_t>> for_each_bindings(const json& f,
                                                              const std::string& field,
                                                              ManifestSource& s) {
  std::vector<std::map<std::string, int64_t>> out;
  bool ok = true;
  if (f.is_object() && !f.empty()) {
    // Every combination: said as a count before any is made.
    uint64_t combinations = 1;
    for (auto it = f.begin(); it != f.end(); ++it)
      if (it->is_array())
        combinations = std::min<uint64_t>(combinations * std::max<size_t>(it->size(), 1), 1u << 20);
    if (combinations > kMaxExpandedLaunches) {
      s.expansion_problems.emplace_back(field, "expands to " + std::to_string(combinations) +
                                                   " launches, more than " +
                                                   std::to_string(kMaxExpandedLaunches));
      return {};
    }
    out.push_back({});
    for (auto it = f.begin(); it != f.end(); ++it) {
      if (!is_identifier(it.key()) || !it->is_array() || it->empty() ||
          it->size() > kMaxExpandedLaunches) {
        ok = false;
        continue;
      }
      std::vector<std::map<std::string, int64_t>> next;
      for (std::size_t j = 0; j < it->size(); ++j) {
        if (!(*it)[j].is_number_integer()) {
          ok = false;
          continue;
        }
        for (auto b : out) {
          b[it.key()] = (*it)[j].get<int64_t>();
          next.push_back(std::move(b));
        }
      }
      out = std::move(next);
    }
  } else if (f.is_array() && !f.empty()) {
    for (std::size_t j = 0; j < f.size() && j <= kMaxExpandedLaunches; ++j) {
      const json& o = f[j];
      if (!o.is_object() || o.empty()) {
        ok = false;
        continue;
      }
      std::map<std::string, int64_t> b;
      for (auto it = o.begin(); it != o.end(); ++it) {
        if (is_identifier(it.key()) && it->is_number_integer()) b[it.key()] = it->get<int64_t>();
        else ok = false;
      }
      out.push_back(std::move(b));
    }
  } else {
    return {};
  }
  if (!ok) return {};
  return out;
}

ArgSource arg(const json& a, const std::string& field, const std::string& kind) {
  ArgSource out;
  out.field = field;
  out.kind = kind;
  out.value = value(a.at(kind), sub(field, kind));
  if (auto t = a.find("type"); t != a.end()) {
    out.has_type = true;
    if (t->is_string()) out.type = parse_scalar_type(t->get<std::string>());
  }
  if (kind == "stride") out.stride = binding(a.at(kind), sub(field, kind));
  return out;
}

LaunchSource launch(const json& l, const std::string& field) {
  LaunchSource out;
  out.field = field;
  if (auto k = l.find("kernel"); k != l.end()) {
    out.has_kernel = true;
    if (k->is_string()) {
      out.kernel = value(*k, sub(field, "kernel"));
    } else if (k->is_object() && !k->empty()) {
      out.kernel_per_dtype = true;
      for (const auto& item : k->items()) {
        out.kernel_keys.push_back(item.key());
        const std::string f = sub(sub(field, "kernel"), item.key());
        out.kernel_for_dtype.emplace_back(value(json(item.key()), f), value(item.value(), f));
      }
    }
  }
  out.grid = expr_list(l, field, "grid");
  out.block = expr_list(l, field, "block");
  out.shared_mem = value_at(l, "shared_mem", sub(field, "shared_mem"));
  out.max_dynamic_shared_mem =
      value_at(l, "max_dynamic_shared_mem", sub(field, "max_dynamic_shared_mem"));
  if (auto c = l.find("carveout");
      c != l.end() && c->is_number_integer())  // (the schema: -1 to 100)
    out.carveout = static_cast<int>(c->get<int64_t>());
  out.cluster = expr_list(l, field, "cluster");
  out.cooperative = l.value("cooperative", false) == true;
  out.pdl = l.value("pdl", false) == true;
  if (auto args = l.find("args"); args != l.end()) {
    out.has_args = true;
    for (std::size_t j = 0; args->is_array() && j < args->size(); ++j) {
      const json& a = (*args)[j];
      if (!a.is_object()) continue;
      std::vector<std::string> kinds;
      for (const auto& k : kArgKinds)
        if (a.contains(k)) kinds.push_back(k);
      if (kinds.size() == 1)
        out.args.push_back(arg(a, at(sub(field, "args"), j), kinds[0]));  // (the schema: one kind)
    }
  }
  if (auto w = l.find("when"); w != l.end() && w->is_object()) {
    WhenSource when;
    when.if_expr = value_at(*w, "if", sub(sub(field, "when"), "if"));
    if (auto ls = w->find("layouts"); ls != w->end()) when.layouts = layouts(*ls);
    out.when = std::move(when);
  }
  if (auto o = l.find("nvrtc_options"); o != l.end())
    out.nvrtc_options = options(*o, sub(field, "nvrtc_options"));
  out.cubins = binaries(l, field);
  out.assumes = expr_list(l, field, "assumes");
  return out;
}

void decode_launches(const json& doc, ManifestSource& s) {
  auto it = doc.find("launches");
  if (it == doc.end() || !it->is_array() || it->empty() || it->size() > kMaxLaunches) {
    s.launches_incomplete = true;
    return;
  }
  // "launch_defaults": keys a launch that omits them takes from there.
  json defaults = json::object();
  if (auto d = doc.find("launch_defaults"); d != doc.end() && d->is_object())
    for (const auto& k : kLaunchDefaultKeys)
      if (auto v = d->find(k); v != d->end()) defaults[k] = *v;
  // Each launch, with its defaults and every binding of its "for_each", in order.
  std::vector<std::pair<std::string, json>> expanded;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& l = (*it)[i];
    const std::string field = at("launches", i);
    if (!l.is_object()) continue;
    json merged = defaults;
    for (auto kv = l.begin(); kv != l.end(); ++kv)
      if (kv.key() != "for_each") merged[kv.key()] = kv.value();
    auto f = l.find("for_each");
    if (f == l.end()) {
      expanded.emplace_back(field, std::move(merged));
      continue;
    }
    const auto bindings = for_each_bindings(*f, sub(field, "for_each"), s);
    if (bindings.empty()) s.launches_incomplete = true;
    for (const auto& b : bindings) {
      std::string label = field + "{";
      for (const auto& [name, v] : b)
        label += (label.back() == '{' ? "" : ",") + name + "=" + std::to_string(v);
      expanded.emplace_back(label + "}", substitute(merged, b));
    }
  }
  if (expanded.size() > kMaxExpandedLaunches) {
    s.expansion_problems.emplace_back("launches", "expands to " + std::to_string(expanded.size()) +
                                                      " launches (for_each), more than " +
                                                      std::to_string(kMaxExpandedLaunches));
    s.launches_incomplete = true;
    return;
  }
  for (const auto& [field, l] : expanded) s.launches.push_back(launch(l, field));
}

GuardSource guard(const json& g) {
  GuardSource out;
  // guard.ranks is read with guard.dtypes (required: the schema says when it is not an array).
  auto dtypes = g.find("dtypes");
  if (dtypes != g.end() && dtypes->is_array()) out.dtypes = strings(*dtypes, "guard.dtypes");
  if (auto r = g.find("ranks");
      dtypes != g.end() && dtypes->is_array() && r != g.end() && r->is_array())
    for (const json& v : *r)
      if (v.is_number_integer() && v.get<int64_t>() >= 1 && v.get<int64_t>() <= kMaxRank)
        out.ranks.push_back(static_cast<int>(v.get<int64_t>()));
  if (auto it = g.find("shapes"); it != g.end() && it->is_object()) {
    for (const auto& item : it->items()) {
      ShapeRangeSource r;
      r.symbol = item.key();
      r.field = sub("guard.shapes", item.key());
      const json& v = item.value();
      r.is_object = v.is_object();
      if (r.is_object) {
        r.has_min = v.contains("min");
        r.has_max = v.contains("max");
        r.min = int_at(v, "min", 0);
        r.max = int_at(v, "max", 0);
        r.multiple_of = int_at(v, "multiple_of", 1);
      }
      out.shapes.push_back(std::move(r));
    }
  }
  if (auto it = g.find("layouts"); it != g.end()) out.layouts = layouts(*it);
  if (auto it = g.find("variants"); it != g.end() && it->is_array()) {
    out.has_variants = true;
    out.variant_count = it->size();
    for (std::size_t i = 0; i < it->size() && it->size() <= kMaxVariants; ++i) {
      const json& v = (*it)[i];
      if (!v.is_object()) continue;
      VariantSource var;
      var.field = at("guard.variants", i);
      if (auto dims = v.find("dims"); dims != v.end() && dims->is_object()) {
        var.has_dims = true;
        for (const auto& d : dims->items()) {
          var.dim_keys.push_back(d.key());
          std::optional<int64_t> x;
          if (d.value().is_number_integer() && d.value().get<int64_t>() >= 0)
            x = d.value().get<int64_t>();
          var.dims.push_back({d.key(), sub(sub(var.field, "dims"), d.key()), x});
        }
      }
      var.dtype = value_at(v, "dtype", sub(var.field, "dtype"));
      var.calls = int_at(v, "calls", 1);
      out.variants.push_back(std::move(var));
    }
  }
  if (auto it = g.find("require");
      it != g.end() && it->is_array() && !it->empty() && it->size() <= kMaxRequire)
    out.require = strings(*it, "guard.require");
  if (auto it = g.find("unmatched"); it != g.end()) out.unmatched_fallback = *it == "fallback";
  return out;
}

}  // namespace

ManifestSource decode_manifest(const nlohmann::json& doc) {
  ManifestSource s;
  s.format = string_at(doc, "format");
  s.name = string_at(doc, "name");
  s.version = string_at(doc, "version");
  s.description = string_at(doc, "description");
  s.op = string_at(doc, "op");
  s.op_file = value_at(doc, "op_file", "op_file");
  decode_attributes(doc, s);
  s.sources = paths(doc, "sources");
  s.include_dirs = paths(doc, "include_dirs");
  s.captured_inputs = paths(doc, "captured_inputs");
  decode_binaries(doc, s);
  if (auto it = doc.find("nvrtc_options"); it != doc.end())
    s.nvrtc_options = options(*it, "nvrtc_options");
  if (auto it = doc.find("nvrtc_options_for_dtype"); it != doc.end() && it->is_object())
    for (auto e = it->begin(); e != it->end(); ++e) {
      const std::string field = sub("nvrtc_options_for_dtype", e.key());
      s.nvrtc_options_for_dtype.push_back({value(json(e.key()), field), options(*e, field)});
    }
  decode_symbols(doc, s);
  decode_workspace(doc, s);
  decode_outputs(doc, s);
  decode_launches(doc, s);
  if (auto g = doc.find("guard"); g != doc.end() && g->is_object()) s.guard = guard(*g);
  return s;
}

}  // namespace kgate::package::source
