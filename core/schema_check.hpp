// The structural checks of kgate's file formats: a JSON Schema (draft-07) run through a schema
// validator (valijson), its errors said as kgate says problems: the field (launches[2].grid[0]),
// what was found, what was expected, and a did-you-mean for an unknown key. The schemas of
// kgate-package/1 and kgate-op/1 are compiled into the library: kgate checks files outside its
// tree.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kgate {

/// One structural problem: the field as kgate writes it ("(document)" for the top level) and
/// what is wrong there, with what is expected.
struct SchemaProblem {
  std::string field;
  std::string message;
};

/// A JSON Schema, parsed once. Besides the draft-07 keywords, a schema node may say what it
/// expects in words ("x-expected": "a semantic version such as \"1.2.0\""); without it the words
/// come from the node (const, enum, type, bounds).
class SchemaCheck {
 public:
  explicit SchemaCheck(const std::string& schema_text);
  ~SchemaCheck();
  SchemaCheck(const SchemaCheck&) = delete;
  SchemaCheck& operator=(const SchemaCheck&) = delete;

  /// Every structural problem of `doc`, the most specific first and one per field, in document
  /// order; none when the document is valid.
  std::vector<SchemaProblem> problems(const nlohmann::json& doc) const;

  /// kgate-package/1 (runtime/package/kgate-package.schema.json).
  static const SchemaCheck& package_manifest();
  /// kgate-op/1 (core/kgate-op.schema.json).
  static const SchemaCheck& op_file();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Whether `field` is `parent` or inside it (launches[0].grid is inside launches and launches[0]).
bool field_within(const std::string& field, const std::string& parent);

/// The schema's problems that no semantic check speaks of: where both say something of one field,
/// the check says more (which symbol is undeclared, which part of a path leaves the package), so
/// the schema's line for that field goes. `Problem` is any type with a `field`.
template <typename Problem>
std::vector<SchemaProblem> unspoken(const std::vector<SchemaProblem>& schema,
                                    const std::vector<Problem>& checks) {
  std::vector<SchemaProblem> out;
  for (const auto& s : schema)
    if (std::none_of(checks.begin(), checks.end(),
                     [&](const Problem& p) { return p.field == s.field; }))
      out.push_back(s);
  return out;
}

/// How a JSON value looks in a message: "abc" (quoted, made safe), 3, an object, an array, null.
std::string describe_json(const nlohmann::json& v);

}  // namespace kgate
