// Reason names: where a verdict's reason becomes text and text a reason.
#include "core/reason.hpp"

#include "core/error.hpp"

namespace kgate {

const char* reason_name(Reason reason) {
  const auto i = static_cast<size_t>(reason);
  return i < kReasonCount ? kReasonNames[i].name : "?";
}

std::optional<Reason> find_reason(const std::string& name) {
  for (size_t i = 0; i < kReasonCount; ++i)
    if (name == kReasonNames[i].name) return kReasonNames[i].reason;
  return std::nullopt;
}

Reason parse_reason(const std::string& name, const std::string& where) {
  if (auto r = find_reason(name)) return *r;
  std::string known;
  for (size_t i = 1; i < kReasonCount; ++i)
    known += (i == 1 ? "" : ", ") + std::string(kReasonNames[i].name);
  throw_usage(where + ": unknown rule '" + name + "'; expected one of " + known);
}

}  // namespace kgate
