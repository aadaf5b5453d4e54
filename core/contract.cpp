// A kernel's contract (contract.hpp): parsing, the test of a case, and the contract as a guard.
#include "core/contract.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/expr.hpp"
#include "core/safe_text.hpp"

namespace kgate {
namespace {

const std::vector<std::string>& layout_names() {
  static const std::vector<std::string> v = {"contiguous", "row_padded", "offset", "strided"};
  return v;
}

// The alignment, in bytes, of the base pointers of a case of this layout and dtype (0: kgate's own,
// 256 or more).
int64_t base_alignment(Layout l, DType dtype) {
  if (l == Layout::offset) return static_cast<int64_t>(dtype_size(dtype));
  if (l == Layout::offset16) return 16;
  return 0;
}

package::SymbolValues values_of(const Case& c) { return package::symbol_values(c.dims); }

}  // namespace

std::string contract_layout(Layout l) {
  switch (l) {
    case Layout::contiguous:
      return "contiguous";
    case Layout::padded:
      return "row_padded";
    case Layout::offset:
    case Layout::offset16:
      return "offset";
    case Layout::strided:
      return "strided";
  }
  return "contiguous";
}

std::string contract_layout_list() { return "contiguous, row_padded, offset or strided"; }

Contract parse_contract(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object())
    throw_usage(where +
                ": expected an object such as {\"layouts\": [\"contiguous\"], \"dtypes\": "
                "[\"f16\"], \"require\": [\"N % 8 == 0\"]}, found " +
                j.dump());
  static const std::vector<std::string> keys = {"dtypes", "layouts", "alignment", "require",
                                                "empty"};
  for (const auto& [k, v] : j.items())
    if (std::find(keys.begin(), keys.end(), k) == keys.end())
      throw_usage(where + ": unknown key '" + k + "' (expected " + join(keys) + ")");
  Contract c;
  c.text = j.dump();
  const auto strings = [&](const char* key) {
    std::vector<std::string> out;
    if (!j.contains(key)) return out;
    const auto& a = j[key];
    if (!a.is_array() || a.empty())
      throw_usage(where + "." + key + ": expected a non-empty array of strings, found " + a.dump());
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_string())
        throw_usage(where + "." + key + "[" + std::to_string(i) + "]: expected a string, found " +
                    a[i].dump());
      out.push_back(a[i].get<std::string>());
    }
    return out;
  };
  for (const auto& d : strings("dtypes")) {
    try {
      c.dtypes.push_back(parse_dtype(d));
    } catch (const Error& e) {
      throw_usage(where + ".dtypes: " + e.what());
    }
  }
  c.layouts = strings("layouts");
  for (size_t i = 0; i < c.layouts.size(); ++i) {
    if (c.layouts[i] == "padded") c.layouts[i] = "row_padded";
    if (std::find(layout_names().begin(), layout_names().end(), c.layouts[i]) ==
        layout_names().end())
      throw_usage(where + ".layouts[" + std::to_string(i) + "]: unknown layout '" + c.layouts[i] +
                  "' (expected " + contract_layout_list() + ")");
  }
  if (j.contains("alignment")) {
    const auto& a = j["alignment"];
    if (!a.is_number_integer() || a.get<int64_t>() < 0 ||
        (a.get<int64_t>() & (a.get<int64_t>() - 1)) != 0)
      throw_usage(where +
                  ".alignment: expected the bytes every base pointer is aligned to, a "
                  "power of two such as 16 (0: any), found " +
                  a.dump());
    c.alignment = a.get<int64_t>();
  }
  c.require = strings("require");
  for (size_t i = 0; i < c.require.size(); ++i) {
    try {
      package::Expr::parse(c.require[i]);
    } catch (const Error& e) {
      throw_usage(where + ".require[" + std::to_string(i) + "]: " + e.what());
    }
  }
  if (j.contains("empty")) {
    if (!j["empty"].is_boolean())
      throw_usage(where +
                  ".empty: expected true (takes tensors with a zero dimension) or false, "
                  "found " +
                  j["empty"].dump());
    c.empty = j["empty"].get<bool>();
  }
  return c;
}

nlohmann::json to_json(const Contract& c) { return nlohmann::json::parse(c.text); }

void check_contract(const Contract& c, const OpSignature& op, const std::string& where) {
  for (const DType d : c.dtypes)
    if (std::find(op.dtypes.begin(), op.dtypes.end(), d) == op.dtypes.end()) {
      std::vector<std::string> names;
      for (const DType o : op.dtypes) names.push_back(dtype_name(o));
      throw_usage(where + ".dtypes: " + dtype_name(d) + " is no dtype of op " + op.name + " (" +
                  join(names) + ")");
    }
  std::set<std::string, std::less<>> symbols;
  for (const auto& s : op.symbols) symbols.insert(s.name);
  for (size_t i = 0; i < c.require.size(); ++i) {
    try {
      package::Expr::parse(c.require[i]).check_symbols(symbols);
    } catch (const Error& e) {
      throw_usage(where + ".require[" + std::to_string(i) + "]: " + e.what() + " (op " + op.name +
                  "'s shape symbols)");
    }
  }
}

std::string outside_contract(const Contract& c, const OpSignature& op, const Case& kcase) {
  (void)op;
  if (!c.dtypes.empty() &&
      std::find(c.dtypes.begin(), c.dtypes.end(), kcase.dtype) == c.dtypes.end()) {
    std::vector<std::string> names;
    for (const DType d : c.dtypes) names.push_back(dtype_name(d));
    return std::string("dtype ") + dtype_name(kcase.dtype) + " is not among contract.dtypes [" +
           join(names) + "]";
  }
  if (!c.empty)
    for (const auto& [name, v] : kcase.dims)
      if (v == 0) return name + "=0 is an empty tensor, and contract.empty is false";
  const std::string layout = contract_layout(kcase.layout);
  if (!c.layouts.empty() &&
      std::find(c.layouts.begin(), c.layouts.end(), layout) == c.layouts.end())
    return "layout " + layout + " is not among contract.layouts [" + join(c.layouts) + "]";
  if (const int64_t a = base_alignment(kcase.layout, kcase.dtype); a > 0 && c.alignment > a)
    return "its base pointers are " + std::to_string(a) +
           "-byte aligned, and contract.alignment is " + std::to_string(c.alignment);
  const auto values = values_of(kcase);
  for (const auto& r : c.require) {
    bool holds = false;
    try {
      holds = package::evaluate_expr(r, values) != 0;
    } catch (const Error&) {
      holds = false;
    }
    if (!holds) {
      std::string dims;
      for (const auto& s : package::Expr::parse(r).symbols())
        if (auto it = values.find(s); it != values.end())
          dims += (dims.empty() ? "" : ",") + s + "=" + std::to_string(it->second);
      return dims + (dims.empty() ? "" : " ") + "breaks contract.require \"" + r + "\"";
    }
  }
  return "";
}

GuardModel guard_model_of(const Contract& c, const OpSignature& op, const std::string& name) {
  GuardModel g;
  g.name = "contract/" + name;
  for (const auto& r : c.require) {
    const package::Expr e = package::Expr::parse(r);
    GuardModel::Predicate p;
    for (const auto& s : e.symbols())
      if (op.symbol(s)) p.symbols.emplace_back(s, e.comparison_bounds(s));
    p.holds = [e](const Case& k) -> std::optional<bool> {
      try {
        return e.evaluate(package::symbol_values(k.dims)) != 0;
      } catch (const Error&) {
        return std::nullopt;
      }
    };
    g.require.push_back(std::move(p));
  }
  g.admits_dtype = [c](DType d) {
    return c.dtypes.empty() || std::find(c.dtypes.begin(), c.dtypes.end(), d) != c.dtypes.end();
  };
  g.inside = [c, &op](const Case& k) { return outside_contract(c, op, k).empty(); };
  return g;
}

}  // namespace kgate
