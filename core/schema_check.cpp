// valijson's errors in kgate's words. valijson reports each failed constraint with its context
// (["<root>"]["launches"][2]) and every enclosing schema that failed because of it; a choice
// (oneOf/anyOf) that fails reports the errors of all its branches. Here the enclosing failures are
// dropped, a choice is judged by the branch the value was meant for (its JSON type, or the key
// that names the branch), and each remaining error becomes "field: expected X, found Y".
#include "core/schema_check.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/adapters/std_string_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "core/error.hpp"
#include "core/safe_text.hpp"
#include "core/schemas.hpp"
#include "core/suggest.hpp"

namespace kgate {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

/// One step of a path in a document: a key, or an index.
struct Step {
  std::string key;
  bool index = false;
  std::size_t i = 0;
};
using Path = std::vector<Step>;

std::string field_of(const Path& path) {
  std::string out;
  for (const auto& s : path)
    out += s.index ? "[" + std::to_string(s.i) + "]" : (out.empty() ? "" : ".") + s.key;
  return out.empty() ? "(document)" : out;
}

bool path_within(const Path& p, const Path& parent) {
  if (p.size() < parent.size()) return false;
  for (std::size_t k = 0; k < parent.size(); ++k)
    if (p[k].index != parent[k].index || p[k].key != parent[k].key || p[k].i != parent[k].i)
      return false;
  return true;
}

/// The value at `path`, or null when there is none.
const json* value_at(const json& doc, const Path& path) {
  const json* v = &doc;
  for (const auto& s : path) {
    if (s.index ? !v->is_array() || s.i >= v->size() : !v->is_object() || !v->contains(s.key))
      return nullptr;
    v = s.index ? &(*v)[s.i] : &(*v)[s.key];
  }
  return v;
}

/// valijson's context ("<root>", "[launches]", "[2]") as a path of `doc`: "[2]" is an index where
/// the value is an array, a key where it is an object.
Path path_of(const std::vector<std::string>& context, const json& doc) {
  Path out;
  const json* v = &doc;
  for (const auto& c : context) {
    if (c == "<root>" || c.size() < 2) continue;
    const std::string token = c.substr(1, c.size() - 2);
    Step s;
    if (v && v->is_array()) {
      s.index = true;
      s.i = std::stoul(token);
      v = s.i < v->size() ? &(*v)[s.i] : nullptr;
    } else {
      s.key = token;
      v = v && v->is_object() && v->contains(token) ? &(*v)[token] : nullptr;
    }
    out.push_back(std::move(s));
  }
  return out;
}

/// The 'X' of a description such as "Missing required property 'X'."
std::string quoted_name(const std::string& description) {
  const auto a = description.find('\'');
  const auto b = description.rfind('\'');
  return a == std::string::npos || b <= a ? std::string() : description.substr(a + 1, b - a - 1);
}

bool starts(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

/// The longest string that any "pattern" of kgate's schemas admits is 1024 bytes. valijson matches
/// patterns with std::regex, which recurses per character (a 40 KB string overflowed the stack):
/// a longer string is judged by its first 1024 bytes and a control character, which every
/// pattern and every "maxLength" refuses, as they refuse the whole.
constexpr std::size_t kLongestPatterned = 1024;

bool has_long_string(const json& v) {
  if (v.is_string()) return v.get_ref<const std::string&>().size() > kLongestPatterned;
  if (v.is_structured())
    for (const auto& e : v)
      if (has_long_string(e)) return true;
  if (v.is_object())
    for (const auto& e : v.items())
      if (e.key().size() > kLongestPatterned) return true;
  return false;
}

json shortened(const json& v) {
  const auto cut = [](const std::string& s) {
    return s.size() > kLongestPatterned ? s.substr(0, kLongestPatterned) + "\x01" : s;
  };
  if (v.is_string()) return cut(v.get<std::string>());
  if (v.is_array()) {
    json out = json::array();
    for (const auto& e : v) out.push_back(shortened(e));
    return out;
  }
  if (v.is_object()) {
    json out = json::object();
    for (const auto& e : v.items()) out[cut(e.key())] = shortened(e.value());
    return out;
  }
  return v;
}

struct Raw {
  Path path;
  std::string description;
};

std::vector<Raw> validate(const valijson::Schema& schema, const json& doc, bool* valid) {
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter adapter(doc);
  *valid = validator.validate(schema, adapter, &results);
  std::vector<Raw> out;
  valijson::ValidationResults::Error e;
  while (results.popError(e)) out.push_back({path_of(e.context, doc), e.description});
  return out;
}

void parse_schema(const json& doc, valijson::Schema& schema) {
  valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
  valijson::adapters::NlohmannJsonAdapter adapter(doc);
  parser.populateSchema(adapter, schema);
}

}  // namespace

std::string describe_json(const json& v) {
  switch (v.type()) {
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case json::value_t::string:
      return quote_untrusted(v.get_ref<const std::string&>(), 57);
    default:
      break;
  }
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

bool field_within(const std::string& field, const std::string& parent) {
  if (field.rfind(parent, 0) != 0) return false;
  return field.size() == parent.size() || field[parent.size()] == '.' ||
         field[parent.size()] == '[';
}

struct SchemaCheck::Impl {
  ojson words;  ///< the schema in its own key order: what messages list and say
  json plain;   ///< the same for valijson
  valijson::Schema schema;
  mutable std::mutex mutex;
  /// Parts of the schema validated alone (a choice's branch, a propertyNames), by JSON pointer.
  mutable std::map<std::string, std::unique_ptr<valijson::Schema>> parts;

  /// A node of the schema: its JSON pointer and its value.
  struct Node {
    std::string pointer;
    const ojson* j = nullptr;
  };

  Node resolve(Node n) const {
    for (int depth = 0; n.j && n.j->is_object() && n.j->contains("$ref") && depth < 16; ++depth) {
      const auto& ref = (*n.j)["$ref"];
      if (!ref.is_string() || !starts(ref.get<std::string>(), "#")) break;
      n.pointer = ref.get<std::string>().substr(1);
      n.j = &words.at(ojson::json_pointer(n.pointer));
    }
    return n;
  }

  /// A member of an object node, or an item of an array node ("allOf", "0").
  static Node member(const Node& n, const std::string& key) {
    if (n.j->is_array()) return {n.pointer + "/" + key, &(*n.j)[std::stoul(key)]};
    return {n.pointer + "/" + key, &(*n.j)[key]};
  }

  /// The schema of the value one step below `n` (properties, items, additionalProperties, the
  /// branches of allOf/anyOf/oneOf), before its "$ref" is followed (words beside a "$ref" are the
  /// field's own); an empty node when the schema says nothing of it.
  Node child(Node n, const Step& s) const {
    n = resolve(n);
    if (!n.j || !n.j->is_object()) return {};
    const ojson& j = *n.j;
    if (!s.index && j.contains("properties") && j["properties"].contains(s.key) &&
        j["properties"][s.key].is_object())
      return member(member(n, "properties"), s.key);
    if (s.index && j.contains("items")) {
      const Node items = member(n, "items");
      if (items.j->is_object()) return items;
      if (items.j->is_array() && s.i < items.j->size()) return member(items, std::to_string(s.i));
    }
    if (!s.index && j.contains("additionalProperties") && j["additionalProperties"].is_object())
      return member(n, "additionalProperties");
    for (const char* kw : {"allOf", "anyOf", "oneOf"})
      if (j.contains(kw))
        for (std::size_t b = 0; b < j[kw].size(); ++b)
          if (Node c = child(member(member(n, kw), std::to_string(b)), s); c.j) return c;
    return {};
  }

  Node node_at(Node root, const Path& path) const {
    Node n = root;
    for (const auto& s : path) {
      n = child(n, s);
      if (!n.j) return {};
    }
    return n;
  }

  /// The keys an object of schema `n` may hold, in the schema's order.
  std::vector<std::string> known_keys(Node n) const {
    std::vector<std::string> out;
    n = resolve(n);
    if (!n.j || !n.j->is_object()) return out;
    if (n.j->contains("properties"))
      for (const auto& item : (*n.j)["properties"].items())
        if (std::find(out.begin(), out.end(), item.key()) == out.end()) out.push_back(item.key());
    if (n.j->contains("allOf"))
      for (std::size_t b = 0; b < (*n.j)["allOf"].size(); ++b)
        for (const auto& k : known_keys(member(member(n, "allOf"), std::to_string(b))))
          if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
    return out;
  }

  /// What schema `n` expects, in words.
  std::string expected(Node n) const {
    if (n.j && n.j->is_object() && n.j->contains("x-expected"))
      return (*n.j)["x-expected"].get<std::string>();
    n = resolve(n);
    if (!n.j || !n.j->is_object()) return "a value this format allows";
    const ojson& j = *n.j;
    if (j.contains("x-expected")) return j["x-expected"].get<std::string>();
    if (j.contains("const")) return j["const"].dump();
    if (j.contains("enum")) {
      std::vector<std::string> values;
      for (const auto& v : j["enum"])
        values.push_back(v.is_string() ? v.get<std::string>() : v.dump());
      return "one of " + join(values);
    }
    for (const char* kw : {"oneOf", "anyOf"})
      if (j.contains(kw)) {
        std::vector<std::string> each;
        for (std::size_t b = 0; b < j[kw].size(); ++b)
          each.push_back(expected(member(member(n, kw), std::to_string(b))));
        return join(each, " or ");
      }
    const std::string type =
        j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "";
    if (type == "integer" || type == "number") {
      const std::string what = type == "integer" ? "an integer" : "a number";
      const bool lo = j.contains("minimum"), hi = j.contains("maximum");
      if (lo && hi) return what + " from " + j["minimum"].dump() + " to " + j["maximum"].dump();
      if (j.contains("exclusiveMinimum") && hi)
        return what + " > " + j["exclusiveMinimum"].dump() + " and <= " + j["maximum"].dump();
      if (j.contains("exclusiveMinimum")) return what + " > " + j["exclusiveMinimum"].dump();
      if (lo) return what + " >= " + j["minimum"].dump();
      if (hi) return what + " <= " + j["maximum"].dump();
      return what;
    }
    if (type == "string")
      return j.contains("maxLength")
                 ? "a string of at most " + j["maxLength"].dump() + " characters"
                 : "a string";
    if (type == "boolean") return "true or false";
    if (type == "array") {
      const std::string of =
          j.contains("items") && j["items"].is_object() ? " of " + plural(member(n, "items")) : "";
      if (j.contains("maxItems"))
        return "an array of " + (j.contains("minItems") ? j["minItems"].dump() : std::string("0")) +
               " to " + j["maxItems"].dump() + of;
      return (j.value("minItems", 0) > 0 ? "a non-empty array" : "an array") + of;
    }
    if (type == "object")
      return j.value("minProperties", 0) > 0 ? "a non-empty object" : "an object";
    return "a value this format allows";
  }

  /// The items of an array, in words: "one of a, b" -> "values among a, b".
  std::string plural(Node items) const {
    const std::string e = expected(items);
    if (starts(e, "one of ")) return e.substr(7);
    return "items each " + e;
  }

  const valijson::Schema& part(const std::string& pointer) const {
    std::lock_guard<std::mutex> lock(mutex);
    auto& p = parts[pointer];
    if (!p) {
      // The part under "#/x-whole", beside the definitions its "$ref"s name.
      json whole = plain;
      whole.erase("$id");
      whole.erase("$schema");
      json doc = {{"$defs", plain.value("$defs", json::object())},
                  {"x-whole", whole},
                  {"allOf", json::array({{{"$ref", "#/x-whole" + pointer}}})}};
      p = std::make_unique<valijson::Schema>();
      parse_schema(doc, *p);
    }
    return *p;
  }

  struct Problem {
    Path path;
    std::string message;
  };

  /// The problems of `value` under the schema part `root` (already validated: `raws`), their paths
  /// below `prefix`.
  void translate(const std::vector<Raw>& raws, Node root, const json& value, const Path& prefix,
                 std::vector<Problem>& out) const {
    std::vector<bool> dropped(raws.size(), false);
    for (std::size_t k = 0; k < raws.size(); ++k) {
      const std::string& d = raws[k].description;
      // A failed choice reports its branches' errors just before itself: they are judged anew.
      if (starts(d, "Failed to validate against any child schemas allowed by oneOf") ||
          starts(d, "Failed to validate against any schemas allowed by anyOf"))
        for (std::size_t b = k; b-- > 0 && path_within(raws[b].path, raws[k].path);)
          dropped[b] = true;
    }
    std::vector<Path> enclosing;  // paths below which something failed
    const auto full = [&](const Path& p) {
      Path f = prefix;
      f.insert(f.end(), p.begin(), p.end());
      return f;
    };
    for (std::size_t k = 0; k < raws.size(); ++k) {
      if (dropped[k]) continue;
      const Path& path = raws[k].path;
      const std::string& d = raws[k].description;
      const json* v = value_at(value, path);
      if (!v) continue;
      const Node n = node_at(root, path);
      if (starts(d, "Failed to validate against schema associated with property name") ||
          starts(d, "Failed to validate against schema associated with pattern")) {
        Path p = path;
        p.push_back({quoted_name(d), false, 0});
        enclosing.push_back(p);
      } else if (starts(d, "Failed to validate item #") || starts(d, "Cannot validate item #")) {
        Path p = path;
        p.push_back({"", true, std::stoul(d.substr(d.find('#') + 1))});
        enclosing.push_back(p);
      } else if (starts(d, "Failed to validate against additional properties") ||
                 starts(d, "Failed to validate against child schema") ||
                 starts(d, "Failed to validate against a conditional schema") ||
                 starts(d, "Failed to validate against dependent schema")) {
        enclosing.push_back(path);
      } else if (starts(d, "Failed to validate against any child schemas allowed by oneOf") ||
                 starts(d, "Failed to validate against any schemas allowed by anyOf") ||
                 starts(d, "Failed to validate against exactly one child schema")) {
        choice(n, *v, full(path), out);
      } else if (starts(d, "Missing required property")) {
        Path p = path;
        p.push_back({quoted_name(d), false, 0});
        out.push_back({full(p), "missing; expected " + expected(child(n, p.back()))});
      } else if (starts(d, "Object contains a property that could not be validated")) {
        unknown_keys(n, *v, full(path), out);
      } else if (starts(d, "Elements at indexes #")) {
        const std::size_t j = std::stoul(d.substr(d.find('#', d.find("and")) + 1));
        Path p = full(path);
        p.push_back({"", true, j});
        out.push_back({p, (j < v->size() ? describe_json((*v)[j]) : std::string("an item")) +
                              " is listed twice"});
      } else {
        out.push_back({full(path), "expected " + expected(n) + ", found " + describe_json(*v)});
      }
    }
    // A failure with nothing said below it: a key that its schema's propertyNames refuses (valijson
    // does not say which), or a value refused as a whole.
    for (const auto& e : enclosing) {
      const Path p = full(e);
      if (std::any_of(out.begin(), out.end(),
                      [&](const Problem& x) { return path_within(x.path, p); }))
        continue;
      const json* v = value_at(value, e);
      const Node n = resolve(node_at(root, e));
      if (!v || !n.j) continue;
      if (v->is_object() && n.j->contains("propertyNames")) {
        const Node names = member(n, "propertyNames");
        for (const auto& item : v->items()) {
          valijson::Validator validator;
          valijson::adapters::StdStringAdapter key(item.key());
          if (validator.validate(part(names.pointer), key, nullptr)) continue;
          Path kp = p;
          kp.push_back({item.key(), false, 0});
          out.push_back({kp, "expected " + expected(names) + " as a name, found " +
                                 quote_untrusted(item.key(), 60)});
        }
      }
      if (!std::any_of(out.begin(), out.end(),
                       [&](const Problem& x) { return path_within(x.path, p); }))
        out.push_back({p, "expected " + expected(n) + ", found " + describe_json(*v)});
    }
  }

  void unknown_keys(Node n, const json& v, const Path& path, std::vector<Problem>& out) const {
    if (!v.is_object()) return;
    const auto known = known_keys(n);
    // Names other tools use for the same thing.
    static const std::map<std::string, std::string> synonyms = {
        {"kernels", "launches"},      {"options", "nvrtc_options"}, {"flags", "nvrtc_options"},
        {"includes", "include_dirs"}, {"threads", "block"},         {"smem", "shared_mem"}};
    for (const auto& item : v.items()) {
      const std::string& key = item.key();
      if (std::find(known.begin(), known.end(), key) != known.end()) continue;
      std::string guess = closest(key, known);
      if (auto it = synonyms.find(key);
          guess.empty() && it != synonyms.end() &&
          std::find(known.begin(), known.end(), it->second) != known.end())
        guess = it->second;
      Path p = path;
      p.push_back({key, false, 0});
      out.push_back({p, "unknown key " + quote_untrusted(key) + ";" +
                            (guess.empty() ? "" : " did you mean " + quote_untrusted(guess) + "?") +
                            " expected one of: " + join(known)});
    }
  }

  /// A oneOf/anyOf that `v` fails: judged by the branch `v` was meant for, else said as a whole.
  void choice(Node field, const json& v, const Path& path, std::vector<Problem>& out) const {
    const Node n = resolve(field);
    const char* kw = n.j->contains("oneOf") ? "oneOf" : "anyOf";
    const Node list = member(n, kw);
    std::vector<Node> branches;
    for (std::size_t b = 0; b < list.j->size(); ++b)
      branches.push_back(resolve(member(list, std::to_string(b))));
    // Branches that differ only by the key they require: {"required": ["tensor"]}, ...
    std::vector<std::string> keys, present;
    bool by_key = true;
    for (const auto& b : branches) {
      const auto* req = b.j->contains("required") ? &(*b.j)["required"] : nullptr;
      if (!req || req->empty()) {
        by_key = false;
        break;
      }
      keys.push_back((*req)[0].get<std::string>());
      if (v.is_object() && v.contains(keys.back())) present.push_back(keys.back());
    }
    if (by_key && present.size() != 1) {
      if (present.empty() && std::string(kw) == "anyOf") {  // one of several keys is needed
        Path p = path;
        p.push_back({keys[0], false, 0});
        out.push_back(
            {p, "missing; expected " + expected(child(n, p.back())) +
                    (keys.size() > 1 ? " (or " + join({keys.begin() + 1, keys.end()}, ", or ") + ")"
                                     : "")});
      } else {
        out.push_back({path, "expected exactly one of " + join(keys) + ", found " +
                                 (present.empty() ? std::string("none") : join(present, " and "))});
      }
      return;
    }
    const auto admits = [&](const Node& b) {
      if (by_key) return v.is_object() && v.contains(keys[&b - branches.data()]);
      if (!b.j->contains("type")) return true;
      const std::string t = (*b.j)["type"].get<std::string>();
      return (t == "string" && v.is_string()) || (t == "integer" && v.is_number_integer()) ||
             (t == "number" && v.is_number()) || (t == "object" && v.is_object()) ||
             (t == "array" && v.is_array()) || (t == "boolean" && v.is_boolean());
    };
    std::vector<Node> meant;
    for (const auto& b : branches)
      if (admits(b)) meant.push_back(b);
    if (meant.size() == 1) {
      bool valid = true;
      const auto raws = validate(part(meant[0].pointer), v, &valid);
      const std::size_t before = out.size();
      if (!valid) translate(raws, meant[0], v, path, out);
      if (out.size() != before) return;
    }
    out.push_back({path, "expected " + expected(field) + ", found " + describe_json(v)});
  }
};

SchemaCheck::SchemaCheck(const std::string& schema_text) : impl_(std::make_unique<Impl>()) {
  impl_->words = ojson::parse(schema_text);
  impl_->plain = json::parse(schema_text);
  parse_schema(impl_->plain, impl_->schema);
}

SchemaCheck::~SchemaCheck() = default;

std::vector<SchemaProblem> SchemaCheck::problems(const json& original) const {
  const json guarded = has_long_string(original) ? shortened(original) : json();
  const json& doc = guarded.is_null() ? original : guarded;
  bool valid = true;
  const auto raws = validate(impl_->schema, doc, &valid);
  if (valid) return {};
  std::vector<Impl::Problem> found;
  impl_->translate(raws, {"", &impl_->words}, doc, {}, found);
  std::vector<SchemaProblem> out;
  for (const auto& p : found) {
    const std::string field = field_of(p.path);
    if (std::none_of(out.begin(), out.end(),
                     [&](const SchemaProblem& x) { return x.field == field; }))
      out.push_back({field, p.message});
  }
  if (out.empty()) out.push_back({"(document)", "not valid under the format's schema"});
  return out;
}

const SchemaCheck& SchemaCheck::package_manifest() {
  static const SchemaCheck check(schemas::kPackageManifest);
  return check;
}

const SchemaCheck& SchemaCheck::op_file() {
  static const SchemaCheck check(schemas::kOpFile);
  return check;
}

}  // namespace kgate
