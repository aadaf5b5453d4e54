// Reason names: the only place where a verdict's reason becomes text and text a reason.
#include "core/reason.hpp"

#include "core/error.hpp"

namespace kgate {

namespace {
constexpr Reason kAll[] = {Reason::none,
                           Reason::allclose,
                           Reason::ulp,
                           Reason::ref_ratio,
                           Reason::eager_relative,
                           Reason::index,
                           Reason::conditioned,
                           Reason::memory,
                           Reason::nan_contract,
                           Reason::stale,
                           Reason::determinism,
                           Reason::written_before,
                           Reason::reference_error,
                           Reason::fault,
                           Reason::crash,
                           Reason::hang,
                           Reason::error,
                           Reason::not_run,
                           Reason::huge,
                           Reason::fallback,
                           Reason::wrong_while_timed,
                           Reason::memcheck,
                           Reason::racecheck,
                           Reason::synccheck,
                           Reason::initcheck};
}  // namespace

const char* reason_name(Reason reason) {
  switch (reason) {
    case Reason::none:
      return "";
    case Reason::allclose:
      return "allclose";
    case Reason::ulp:
      return "ulp";
    case Reason::ref_ratio:
      return "ref_ratio";
    case Reason::eager_relative:
      return "eager_relative";
    case Reason::index:
      return "index";
    case Reason::conditioned:
      return "conditioned";
    case Reason::memory:
      return "memory";
    case Reason::nan_contract:
      return "nan_contract";
    case Reason::stale:
      return "stale";
    case Reason::determinism:
      return "determinism";
    case Reason::written_before:
      return "written_before";
    case Reason::reference_error:
      return "reference_error";
    case Reason::fault:
      return "fault";
    case Reason::crash:
      return "crash";
    case Reason::hang:
      return "hang";
    case Reason::error:
      return "error";
    case Reason::not_run:
      return "not_run";
    case Reason::huge:
      return "huge";
    case Reason::fallback:
      return "fallback";
    case Reason::wrong_while_timed:
      return "wrong_while_timed";
    case Reason::memcheck:
      return "memcheck";
    case Reason::racecheck:
      return "racecheck";
    case Reason::synccheck:
      return "synccheck";
    case Reason::initcheck:
      return "initcheck";
  }
  return "?";
}

std::optional<Reason> find_reason(const std::string& name) {
  for (Reason r : kAll)
    if (name == reason_name(r)) return r;
  return std::nullopt;
}

Reason parse_reason(const std::string& name, const std::string& where) {
  if (auto r = find_reason(name)) return *r;
  std::string known;
  for (Reason r : kAll)
    if (r != Reason::none) known += (known.empty() ? "" : ", ") + std::string(reason_name(r));
  throw_usage(where + ": unknown rule '" + name + "'; expected one of " + known);
}

}  // namespace kgate
