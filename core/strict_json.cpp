#include "core/strict_json.hpp"

#include <set>
#include <vector>

namespace kgate {

nlohmann::json parse_strict_json(const std::string& text, std::string* duplicate) {
  using json = nlohmann::json;
  duplicate->clear();
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
