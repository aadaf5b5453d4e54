// Outcome names.
#include "core/outcome.hpp"

#include "core/error.hpp"

namespace kgate {

const char* outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::passed:
      return "passed";
    case Outcome::failed:
      return "failed";
    case Outcome::regressed:
      return "regressed";
    case Outcome::inconclusive:
      return "inconclusive";
    case Outcome::invalid:
      return "invalid";
    case Outcome::skipped:
      return "skipped";
    case Outcome::fragile:
      return "fragile";
    case Outcome::unchanged:
      return "unchanged";
    case Outcome::unchecked:
      return "unchecked";
  }
  return "?";
}

Outcome parse_outcome(const std::string& name) {
  for (Outcome o : {Outcome::passed, Outcome::failed, Outcome::regressed, Outcome::inconclusive,
                    Outcome::invalid, Outcome::skipped, Outcome::fragile, Outcome::unchanged,
                    Outcome::unchecked})
    if (name == outcome_name(o)) return o;
  throw_usage("unknown outcome '" + name + "' in report");
}

}  // namespace kgate
