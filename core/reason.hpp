// Why a case has its verdict: the rule that judged it, or the check or event that decided it. An
// enum everywhere in kgate; its name (reason_name) is written only where a report, a progress line
// or the console says it, and read back (find_reason, parse_reason) only where a report or a
// progress line is read. The correctness rules are reasons too (gates/correctness's registry says
// which reasons are rules, and what each rule is).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace kgate {

enum class Reason {
  none,  ///< no rule judged the case (a pass with nothing to say, or not yet judged)
  // The correctness rules (gates/correctness/registry.cpp).
  allclose,
  ulp,
  ref_ratio,
  eager_relative,
  index,
  conditioned,
  // Checks that fail a case under any rule.
  memory,        ///< unwritten elements, a changed guard band or a modified input
  nan_contract,  ///< the NaN/Inf pattern differs from the reference's
  // Behaviour checks (on the first case of each family).
  stale,           ///< a second input left the output unchanged
  determinism,     ///< two runs differ bitwise
  written_before,  ///< the output held earlier values, not poison, and the verdict changed
  // What happened to the run of a case.
  reference_error,    ///< the op's reference failed: the op's problem, never the kernel's
  fault,              ///< the kernel faulted (the CUDA context is lost)
  crash,              ///< the worker process died on the case
  hang,               ///< the worker process hung on the case
  error,              ///< the case could not be run (an error other than a fault)
  refused,            ///< the kernel's host code raised an error, the device sound: it refused
  not_run,            ///< the case was not run (the context was lost before it)
  huge,               ///< the case was too large for the device
  fallback,           ///< the case was outside the kernel's guard: the reference ran instead
  wrong_while_timed,  ///< the kernel's output in a timed launch failed its rule
  // compute-sanitizer tools (kgate check --sanitize) that found errors in the case.
  memcheck,
  racecheck,
  synccheck,
  initcheck,
};

/// Every reason with its name as reports say it, in the enum's order (checked below).
struct ReasonName {
  Reason reason;
  const char* name;
};
inline constexpr ReasonName kReasonNames[] = {
    {Reason::none, ""},
    {Reason::allclose, "allclose"},
    {Reason::ulp, "ulp"},
    {Reason::ref_ratio, "ref_ratio"},
    {Reason::eager_relative, "eager_relative"},
    {Reason::index, "index"},
    {Reason::conditioned, "conditioned"},
    {Reason::memory, "memory"},
    {Reason::nan_contract, "nan_contract"},
    {Reason::stale, "stale"},
    {Reason::determinism, "determinism"},
    {Reason::written_before, "written_before"},
    {Reason::reference_error, "reference_error"},
    {Reason::fault, "fault"},
    {Reason::crash, "crash"},
    {Reason::hang, "hang"},
    {Reason::error, "error"},
    {Reason::refused, "refused"},
    {Reason::not_run, "not_run"},
    {Reason::huge, "huge"},
    {Reason::fallback, "fallback"},
    {Reason::wrong_while_timed, "wrong_while_timed"},
    {Reason::memcheck, "memcheck"},
    {Reason::racecheck, "racecheck"},
    {Reason::synccheck, "synccheck"},
    {Reason::initcheck, "initcheck"},
};
inline constexpr size_t kReasonCount = sizeof(kReasonNames) / sizeof(kReasonNames[0]);
constexpr bool reason_names_in_order() {
  for (size_t i = 0; i < kReasonCount; ++i)
    if (static_cast<size_t>(kReasonNames[i].reason) != i) return false;
  return kReasonCount == static_cast<size_t>(Reason::initcheck) + 1;
}
static_assert(reason_names_in_order(), "kReasonNames names every Reason once, in the enum's order");

/// The reason's name as reports say it ("allclose", "reference_error"; "" for none).
const char* reason_name(Reason reason);
/// The reason with that name (reason_name's inverse), nullopt for an unknown name.
std::optional<Reason> find_reason(const std::string& name);
/// find_reason, or a usage error naming `where` (a report's case), the name and the known ones.
Reason parse_reason(const std::string& name, const std::string& where);

}  // namespace kgate
