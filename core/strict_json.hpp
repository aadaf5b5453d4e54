// JSON that kgate reads from users (manifests, op files): duplicate keys are not left to the
// parser. JSON leaves them open and nlohmann keeps the last, so two "grid"s would mean that what
// one reader sees is not what another runs.
#pragma once

#include <exception>
#include <string>

#include <nlohmann/json.hpp>

namespace kgate {

/// Parses `text`; `*duplicate` is set to the first key that appears twice in one object ("" when
/// none). Throws nlohmann::json::exception on invalid JSON (and numbers out of range), and on
/// arrays and objects nested more than 128 levels deep (refused before parsing: a recursive walk
/// of such a document would overflow the stack).
nlohmann::json parse_strict_json(const std::string& text, std::string* duplicate);

/// nlohmann's message without its "[json.exception.parse_error.101] " prefix: "parse error at line
/// 3, column 5: ..." (numbers out of range, such as 1e400, come as out_of_range).
std::string json_error_text(const std::exception& e);

}  // namespace kgate
