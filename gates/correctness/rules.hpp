// Correctness rules: allclose, ulp, ref_ratio, plus the memory/behaviour checks that fail a case
// under any rule. Every verdict records the observed error, the allowed error and their ratio.
#pragma once

#include <string>

#include "core/op_signature.hpp"
#include "core/outcome.hpp"
#include "core/report.hpp"

namespace kgate::correctness {

enum class RuleKind { allclose, ulp, ref_ratio };
const char* rule_name(RuleKind kind);
RuleKind parse_rule(const std::string& name);

struct RuleConfig {
  RuleKind kind = RuleKind::allclose;
  Tolerance tolerance;     ///< allclose
  double max_ulp = 4;      ///< ulp
  double ratio_k = 4;      ///< ref_ratio: kernel error <= k * reference error + floor
  double ratio_floor = 0;  ///< ref_ratio floor (absolute); 0: derived from the dtype's eps
};

/// What the runner measured on one case.
struct Measurement {
  ErrorStats vs_reference;
  ErrorStats vs_oracle;
  double reference_vs_oracle_max_abs = 0;
  double allclose_worst = 0;  ///< max over elements of |out - ref| / (atol + rtol * |ref|)
  double max_ulp = 0;         ///< max ULP distance to the reference, in the kernel's dtype
  bool inputs_modified = false;
  bool guard_bands_intact = true;
  std::string worst_element;  ///< "index 12: got 0.5, expected 0.25" for the message
};

struct Verdict {
  Outcome outcome = Outcome::passed;
  std::string rule;
  double observed = 0;
  double allowed = 0;
  double margin = 0;
  std::string message;
};

/// What a "memory" verdict's message says for a broken guard band and for a modified input. A
/// memory verdict names every memory problem it found, joined by "; " (unwritten elements first),
/// so that one problem never hides another.
inline constexpr const char* kGuardBandChanged = "the kernel wrote outside its output (guard band changed)";
inline constexpr const char* kInputModified = "the kernel modified its input (checksum changed)";

/// Applies the memory checks, then the rule. `dtype` scales the ref_ratio floor.
Verdict evaluate(const RuleConfig& rule, const Measurement& m, DType dtype);

}  // namespace kgate::correctness
