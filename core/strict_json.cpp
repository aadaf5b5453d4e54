#include "core/strict_json.hpp"

#include <set>
#include <string>
#include <vector>

namespace kgate {

namespace {

// How deep one array or object may sit in another. kgate's own formats need a handful of levels; a
// document nested hundreds of thousands deep would overflow the stack of whatever walks it
// recursively afterwards (the schema check, a checker), so it is refused before it is parsed.
constexpr size_t kMaxJsonDepth = 128;

// The byte at which `text` first opens its (kMaxJsonDepth + 1)th nested level, or npos. Brackets
// inside strings do not count.
size_t too_deep_at(const std::string& text) {
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string::npos;
}

}  // namespace

nlohmann::json parse_strict_json(const std::string& text, std::string* duplicate) {
  using json = nlohmann::json;
  duplicate->clear();
  if (const size_t at = too_deep_at(text); at != std::string::npos)
    throw json::parse_error::create(
        101, at + 1,
        "arrays and objects are nested more than " + std::to_string(kMaxJsonDepth) + " levels deep",
        nullptr);
  std::vector<std::set<std::string>> keys;  // one set per open object
  const json::parser_callback_t on_event = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    else if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    else if (event == json::parse_event_t::key && !keys.empty() && duplicate->empty() &&
             !keys.back().insert(parsed.get<std::string>()).second)
      *duplicate = parsed.get<std::string>();
    return true;
  };
  return json::parse(text, on_event);
}

std::string json_error_text(const std::exception& e) {
  std::string what = e.what();
  if (const auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
  return what;
}

}  // namespace kgate
