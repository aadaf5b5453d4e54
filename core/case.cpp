// Case names, ids and JSON.
#include "core/case.hpp"

#include <cinttypes>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace kgate {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

}  // namespace

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::contiguous:
      return "contiguous";
    case Layout::strided:
      return "strided";
    case Layout::offset:
      return "offset";
    case Layout::padded:
      return "padded";
    case Layout::offset16:
      return "offset16";
  }
  return "?";
}

Layout parse_layout(const std::string& name) {
  for (Layout l :
       {Layout::contiguous, Layout::strided, Layout::offset, Layout::padded, Layout::offset16})
    if (name == layout_name(l)) return l;
  throw_usage("unknown layout '" + name +
              "': expected contiguous, strided, offset, padded or offset16");
}

const char* values_name(Values values) {
  switch (values) {
    case Values::normal:
      return "normal";
    case Values::uniform:
      return "uniform";
    case Values::extreme:
      return "extreme";
    case Values::tiny:
      return "tiny";
    case Values::large_mean:
      return "large_mean";
    case Values::all_equal:
      return "all_equal";
    case Values::clustered_max:
      return "clustered_max";
    case Values::pm_pairs:
      return "pm_pairs";
    case Values::special:
      return "special";
    case Values::captured:
      return "captured";
  }
  return "?";
}

Values parse_values(const std::string& name) {
  if (name == "captured") return Values::captured;
  for (Values v :
       {Values::normal, Values::uniform, Values::extreme, Values::tiny, Values::large_mean,
        Values::all_equal, Values::clustered_max, Values::pm_pairs, Values::special})
    if (name == values_name(v)) return v;
  throw_usage("unknown value family '" + name +
              "': expected normal, uniform, extreme, tiny, large_mean, all_equal, clustered_max, "
              "pm_pairs or special");
}

int64_t Case::dim(const std::string& name) const {
  for (const auto& [n, v] : dims)
    if (n == name) return v;
  throw Error(ErrorKind::internal, "case " + id() + " has no shape symbol '" + name + "'");
}

void Case::set_dim(const std::string& name, int64_t value) {
  for (auto& [n, v] : dims)
    if (n == name) {
      v = value;
      return;
    }
  dims.emplace_back(name, value);
}

int64_t Case::numel_hint() const {
  int64_t n = 1;
  for (const auto& d : dims) n *= d.second;
  return n;
}

std::string Case::id() const {
  std::ostringstream os;
  os << op << ':' << dtype_name(dtype) << ':';
  for (size_t i = 0; i < dims.size(); ++i)
    os << (i ? "," : "") << dims[i].first << '=' << dims[i].second;
  char seed_hex[17];
  std::snprintf(seed_hex, sizeof seed_hex, "%016" PRIx64, seed);
  os << ':' << layout_name(layout) << ':' << values_name(values);
  if (values == Values::captured) os << '=' << captured;
  os << ':' << seed_hex;
  return os.str();
}

Case Case::from_id(const std::string& id) {
  const auto parts = split(id, ':');
  if (parts.size() != 6)
    throw_usage("malformed case id '" + id +
                "': expected op:dtype:SYM=N,...:layout:values:seedhex (6 fields separated by ':')");
  Case c;
  c.op = parts[0];
  if (c.op.empty()) throw_usage("malformed case id '" + id + "': the op name is empty");
  c.dtype = parse_dtype(parts[1]);
  if (!parts[2].empty()) {
    for (const auto& kv : split(parts[2], ',')) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        throw_usage("malformed case id '" + id + "': shape entry '" + kv + "' is not SYM=N");
      try {
        size_t used = 0;
        const long long v = std::stoll(kv.substr(eq + 1), &used);
        if (used != kv.size() - eq - 1 || v < 0) throw std::invalid_argument("bad");
        c.dims.emplace_back(kv.substr(0, eq), v);
      } catch (const std::exception&) {
        throw_usage("malformed case id '" + id + "': '" + kv +
                    "' needs a non-negative integer after '='");
      }
    }
  }
  c.layout = parse_layout(parts[3]);
  if (parts[4].rfind("captured=", 0) == 0) {
    c.values = Values::captured;
    c.captured = parts[4].substr(9);
    c.captured_path = c.captured;
    if (c.captured.empty())
      throw_usage("malformed case id '" + id + "': 'captured=' names no file");
  } else {
    c.values = parse_values(parts[4]);
  }
  try {
    size_t used = 0;
    c.seed = std::stoull(parts[5], &used, 16);
    if (used != parts[5].size()) throw std::invalid_argument("bad");
  } catch (const std::exception&) {
    throw_usage("malformed case id '" + id + "': seed '" + parts[5] + "' is not hexadecimal");
  }
  return c;
}

bool Case::operator==(const Case& o) const {
  return op == o.op && dtype == o.dtype && dims == o.dims && layout == o.layout &&
         values == o.values && seed == o.seed && captured == o.captured;
}

void to_json(nlohmann::json& j, const Case& c) {
  nlohmann::json dims = nlohmann::json::object();
  nlohmann::json order = nlohmann::json::array();
  for (const auto& [n, v] : c.dims) {
    dims[n] = v;
    order.push_back(n);
  }
  j = {{"id", c.id()},
       {"op", c.op},
       {"dtype", dtype_name(c.dtype)},
       {"dims", dims},
       {"dim_order", order},
       {"layout", layout_name(c.layout)},
       {"values", values_name(c.values)},
       {"seed", c.seed},
       {"family", c.family}};
  if (c.values == Values::captured) j["captured"] = c.captured;
}

void from_json(const nlohmann::json& j, Case& c) {
  if (j.contains("id") && !j.contains("op")) {
    c = Case::from_id(j.at("id").get<std::string>());
    return;
  }
  c.op = j.at("op").get<std::string>();
  c.dtype = parse_dtype(j.at("dtype").get<std::string>());
  c.dims.clear();
  const auto& dims = j.at("dims");
  if (j.contains("dim_order")) {
    for (const auto& n : j.at("dim_order"))
      c.dims.emplace_back(n.get<std::string>(), dims.at(n.get<std::string>()).get<int64_t>());
  } else {
    for (auto it = dims.begin(); it != dims.end(); ++it)
      c.dims.emplace_back(it.key(), it.value().get<int64_t>());
  }
  c.layout = parse_layout(j.value("layout", std::string("contiguous")));
  c.values = parse_values(j.value("values", std::string("normal")));
  c.captured = j.value("captured", std::string());
  c.captured_path = c.captured;
  if (c.values == Values::captured && c.captured.empty())
    throw_usage("a case of captured values names no file (\"captured\")");
  c.seed = j.value("seed", uint64_t{0});
  c.family = j.value("family", std::string());
}

}  // namespace kgate
