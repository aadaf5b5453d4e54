// Configuration file parsing and precedence.
#include "core/config.hpp"

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/format.hpp"

namespace kgate {
namespace {

using nlohmann::json;

struct Ctx {
  const std::string& path;
  const std::vector<std::string>& rules;  ///< the names "rule" may take
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw_usage(path + ": " + field + ": " + what);
  }
};

// A number in [lo, hi]; `open_lo` / `open_hi` leave that end out ("in (0, 0.5)").
double number(const Ctx& c, const json& v, const std::string& field, double lo, double hi,
              bool open_lo = false, bool open_hi = false) {
  if (!v.is_number()) c.fail(field, "expected a number, found " + v.dump());
  const double d = v.get<double>();
  if (!((open_lo ? d > lo : d >= lo) && (open_hi ? d < hi : d <= hi)))
    c.fail(field, "expected a number in " + std::string(open_lo ? "(" : "[") + format_exact(lo) +
                      ", " + format_exact(hi) + (open_hi ? ")" : "]") + ", found " + v.dump());
  return d;
}

void check_keys(const Ctx& c, const json& obj, const std::string& field,
                const std::vector<std::string>& keys) {
  if (!obj.is_object())
    c.fail(field.empty() ? "(top level)" : field, "expected an object, found " + obj.dump());
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (std::find(keys.begin(), keys.end(), it.key()) == keys.end()) {
      std::string known;
      for (const auto& k : keys) known += (known.empty() ? "" : ", ") + k;
      c.fail(field.empty() ? it.key() : field + "." + it.key(),
             "unknown key; expected one of " + known);
    }
}

GateSettings parse_settings(const Ctx& c, const json& j, const std::string& field) {
  static const std::vector<std::string> keys = {"cases",
                                                "families",
                                                "rule",
                                                "atol",
                                                "rtol",
                                                "tolerance",
                                                "max_ulp",
                                                "ref_ratio_k",
                                                "ref_ratio_floor",
                                                "delta",
                                                "alpha",
                                                "time_budget_s",
                                                "fragile_margin",
                                                "gate_against_eager",
                                                "contract",
                                                "outside_contract"};
  check_keys(c, j, field, keys);
  GateSettings s;
  const auto f = [&](const char* k) { return field + "." + k; };
  if (j.contains("cases")) {
    if (!j["cases"].is_number_integer() || j["cases"].get<int64_t>() < 1)
      c.fail(f("cases"), "expected a positive integer, found " + j["cases"].dump());
    s.cases = j["cases"].get<int64_t>();
  }
  if (j.contains("families")) {
    // As kgate check --family takes them (gates/props' families and huge).
    static const std::vector<std::string> known = {"random", "ragged", "extreme", "special",
                                                   "layout", "long",   "huge"};
    if (!j["families"].is_array()) c.fail(f("families"), "expected an array of family names");
    for (const auto& v : j["families"]) {
      if (!v.is_string() ||
          std::find(known.begin(), known.end(), v.get<std::string>()) == known.end())
        c.fail(f("families"),
               "unknown family " + v.dump() +
                   "; expected random, ragged, extreme, special, layout, long or huge");
      s.families.push_back(v.get<std::string>());
    }
  }
  if (j.contains("rule")) {
    const auto& r = j["rule"];
    if (!r.is_string() ||
        std::find(c.rules.begin(), c.rules.end(), r.get<std::string>()) == c.rules.end()) {
      std::string expected;
      for (size_t i = 0; i < c.rules.size(); ++i)
        expected += (i == 0                    ? ""
                     : i + 1 == c.rules.size() ? " or "
                                               : ", ") +
                    json(c.rules[i]).dump();
      c.fail(f("rule"), "expected " + expected + ", found " + r.dump());
    }
    s.rule = r.get<std::string>();
  }
  if (j.contains("atol")) s.atol = number(c, j["atol"], f("atol"), 0, 1e30);
  if (j.contains("rtol")) s.rtol = number(c, j["rtol"], f("rtol"), 0, 1e30);
  if (j.contains("tolerance")) {
    const auto& t = j["tolerance"];
    if (!t.is_object())
      c.fail(f("tolerance"),
             "expected an object keyed by dtype, e.g. {\"bf16\": {\"rtol\": 0.02}}");
    for (auto it = t.begin(); it != t.end(); ++it) {
      const std::string tf = f("tolerance") + "." + it.key();
      DType d;
      try {
        d = parse_dtype(it.key());
      } catch (const Error&) {
        c.fail(tf, "unknown dtype; expected f16, bf16, f32 or f64");
      }
      check_keys(c, it.value(), tf, {"atol", "rtol"});
      auto& entry = s.tolerance[d];
      if (it.value().contains("atol"))
        entry.first = number(c, it.value()["atol"], tf + ".atol", 0, 1e30);
      if (it.value().contains("rtol"))
        entry.second = number(c, it.value()["rtol"], tf + ".rtol", 0, 1e30);
    }
  }
  if (j.contains("max_ulp")) s.max_ulp = number(c, j["max_ulp"], f("max_ulp"), 0, 1e18);
  if (j.contains("ref_ratio_k"))
    s.ref_ratio_k = number(c, j["ref_ratio_k"], f("ref_ratio_k"), 1, 1e6);
  if (j.contains("ref_ratio_floor"))
    s.ref_ratio_floor = number(c, j["ref_ratio_floor"], f("ref_ratio_floor"), 0, 1e30);
  // As the command line takes them: a minimum effect above 0, alpha in (0, 0.5) (the speed gate's
  // decision needs alpha < 0.5), a fragility threshold in (0, 1].
  if (j.contains("delta")) s.delta = number(c, j["delta"], f("delta"), 0, 10, true);
  if (j.contains("alpha")) s.alpha = number(c, j["alpha"], f("alpha"), 0, 0.5, true, true);
  if (j.contains("time_budget_s"))
    s.time_budget_s = number(c, j["time_budget_s"], f("time_budget_s"), 0, 86400);
  if (j.contains("fragile_margin"))
    s.fragile_margin = number(c, j["fragile_margin"], f("fragile_margin"), 0, 1, true);
  if (j.contains("gate_against_eager")) {
    if (!j["gate_against_eager"].is_boolean())
      c.fail(f("gate_against_eager"),
             "expected true or false, found " + j["gate_against_eager"].dump());
    s.gate_against_eager = j["gate_against_eager"].get<bool>();
  }
  if (j.contains("contract")) {
    s.contract = parse_contract(j["contract"], c.path + ": " + f("contract"));
  }
  if (j.contains("outside_contract")) {
    const auto& o = j["outside_contract"];
    if (!o.is_string() || (o != "fail" && o != "warn"))
      c.fail(f("outside_contract"),
             "expected \"fail\" (wrong values outside the contract fail the kernel, the default) "
             "or \"warn\" (they are a warning), found " +
                 o.dump());
    s.outside_contract = o.get<std::string>();
  }
  return s;
}

template <typename T>
void take(std::optional<T>& into, const std::optional<T>& from) {
  if (from) into = from;
}

}  // namespace

void GateSettings::overlay(const GateSettings& o) {
  take(cases, o.cases);
  if (!o.families.empty()) families = o.families;
  take(rule, o.rule);
  // A level that sets a blanket atol/rtol overrides per-dtype values from the levels below it.
  if (o.atol) {
    atol = o.atol;
    for (auto& [d, t] : tolerance) t.first.reset();
  }
  if (o.rtol) {
    rtol = o.rtol;
    for (auto& [d, t] : tolerance) t.second.reset();
  }
  for (const auto& [d, t] : o.tolerance) {
    take(tolerance[d].first, t.first);
    take(tolerance[d].second, t.second);
  }
  take(max_ulp, o.max_ulp);
  take(ref_ratio_k, o.ref_ratio_k);
  take(ref_ratio_floor, o.ref_ratio_floor);
  take(delta, o.delta);
  take(alpha, o.alpha);
  take(time_budget_s, o.time_budget_s);
  take(fragile_margin, o.fragile_margin);
  take(gate_against_eager, o.gate_against_eager);
  take(contract, o.contract);
  take(outside_contract, o.outside_contract);
}

GateSettings Config::resolve(const std::string& op, const std::string& kernel,
                             const GateSettings& cli) const {
  GateSettings s = global;
  if (auto it = ops.find(op); it != ops.end()) s.overlay(it->second);
  if (auto it = kernels.find(kernel); it != kernels.end()) s.overlay(it->second);
  s.overlay(cli);
  return s;
}

Config parse_config(const json& j, const std::string& path, const std::vector<std::string>& rules) {
  const Ctx c{path, rules};
  check_keys(c, j, "",
             {"format", "global", "ops", "kernels", "op_files", "torch_libraries", "torch_ops"});
  if (!j.contains("format") || j["format"] != "kgate-config/1")
    c.fail("format", "expected \"kgate-config/1\", found " +
                         (j.contains("format") ? j["format"].dump() : std::string("nothing")));
  Config cfg;
  cfg.path = path;
  if (j.contains("global")) cfg.global = parse_settings(c, j["global"], "global");
  if (j.contains("op_files")) {
    if (!j["op_files"].is_array())
      c.fail("op_files", "expected an array of op files or directories (as --ops takes)");
    const auto base = std::filesystem::path(path).parent_path();
    for (size_t i = 0; i < j["op_files"].size(); ++i) {
      const auto& v = j["op_files"][i];
      if (!v.is_string() || v.get<std::string>().empty())
        c.fail("op_files[" + std::to_string(i) + "]", "expected a path, found " + v.dump());
      const std::filesystem::path p = v.get<std::string>();
      cfg.op_files.push_back((p.is_absolute() ? p : base / p).lexically_normal().string());
    }
  }
  for (const char* key : {"torch_libraries", "torch_ops"}) {
    if (!j.contains(key)) continue;
    const bool paths = std::string(key) == "torch_libraries";
    if (!j[key].is_array())
      c.fail(key, paths ? "expected an array of shared libraries (as --torch-library takes)"
                        : "expected an array of specs (as --torch-op takes)");
    const auto base = std::filesystem::path(path).parent_path();
    for (size_t i = 0; i < j[key].size(); ++i) {
      const auto& v = j[key][i];
      if (!v.is_string() || v.get<std::string>().empty())
        c.fail(std::string(key) + "[" + std::to_string(i) + "]",
               "expected a string, found " + v.dump());
      const std::filesystem::path p = v.get<std::string>();
      if (paths)
        cfg.torch_libraries.push_back((p.is_absolute() ? p : base / p).lexically_normal().string());
      else cfg.torch_ops.push_back(v.get<std::string>());
    }
  }
  for (const char* level : {"ops", "kernels"}) {
    if (!j.contains(level)) continue;
    if (!j[level].is_object()) c.fail(level, "expected an object keyed by name");
    auto& into = std::string(level) == "ops" ? cfg.ops : cfg.kernels;
    for (auto it = j[level].begin(); it != j[level].end(); ++it)
      into[it.key()] = parse_settings(c, it.value(), std::string(level) + "." + it.key());
  }
  return cfg;
}

Config load_config(const std::filesystem::path& path, const std::vector<std::string>& rules) {
  std::ifstream f(path);
  if (!f) throw_usage(path.string() + ": cannot open the config file (check --config)");
  json j;
  try {
    f >> j;
  } catch (const std::exception& e) {
    throw_usage(path.string() + ": not valid JSON: " + e.what());
  }
  return parse_config(j, path.string(), rules);
}

}  // namespace kgate
