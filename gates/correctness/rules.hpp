// Correctness rules: allclose, ulp, ref_ratio, plus the memory/behaviour checks that fail a case
// under any rule. Every verdict records the observed error, the allowed error and their ratio.
#pragma once

#include <string>
#include <vector>

#include <cstdint>
#include <utility>

#include "core/op_signature.hpp"
#include "core/outcome.hpp"
#include "core/reason.hpp"
#include "core/report.hpp"

namespace kgate::correctness {

/// allclose, ulp and ref_ratio (whole-tensor: max kernel error vs the oracle <= k * eager's max
/// error + floor) can be chosen; eager_relative is ref_ratio element by element, the default for
/// f16 and bf16 outputs: |out - oracle| <= k * max(|eager - oracle|, eps * |oracle|) + atol for
/// every element, so a kernel as accurate as eager (a few ulp apart from it) passes, and an error
/// on a small element cannot hide under a large element's. index is never chosen: it judges an
/// integer output that holds indices into an input (top-k) by the values they select.
/// conditioned is eager_relative with an allowance that also follows each element's conditioning,
/// for ops whose outputs are sums of products (matmul, a norm's sum of squares, rotary):
///   |out - oracle| <= k * max(|eager - oracle|, eps * |oracle|,
///                             eps_acc * (magnitude + length * |oracle|)) + atol
/// where magnitude is sum |terms| of the element's sum (the op's magnitude, float64), terms the
/// number of terms summed (the op's conditioning.terms, e.g. K), length sqrt(terms) (rounding
/// errors of a sum in any order grow as the square root of its length: they cancel) except on
/// rows of equal values, where it is terms / (2k) (equal terms round alike and nothing cancels:
/// the allowance is then the worst-case bound terms * u of a recursive sum, u = eps_acc / 2), and
/// eps_acc the float32 epsilon (float64's for f64 outputs): a correct sum accumulated in float32
/// in any order passes, a sum accumulated in a narrower type or on inputs rounded to one does not;
/// the output dtype's epsilon, where coarser, when the op declares its arithmetic in the case's
/// dtype (accumulate_in_case_dtype). A rule is the reason its verdicts give (Reason::allclose,
/// ...): each is one entry of the registry below (gates/correctness/registry.cpp), and a reason
/// without an entry is no rule.
using RuleKind = Reason;

struct RuleConfig {
  RuleKind kind = RuleKind::allclose;
  Tolerance tolerance;     ///< allclose
  double max_ulp = 4;      ///< ulp
  double ratio_k = 4;      ///< ref_ratio: kernel error <= k * reference error + floor
  double ratio_floor = 0;  ///< ref_ratio floor (absolute); 0: derived from the dtype's eps
  /// The op's tolerance grows with a symbol (a K-long reduction: rtol * sqrt(K)): atol and rtol are
  /// multiplied by value(scale_symbol) ^ scale_power in each case. Set only while the tolerance
  /// is the op's own; a tolerance from a config or the command line is taken as given.
  std::string scale_symbol;
  double scale_power = 0;
  /// conditioned: the op's count of terms per output element, an integer expression of the shape
  /// symbols ("K"; "" when the op declares no conditioning: the magnitude term is then 0), and
  /// its value in a case (scaled_for sets it).
  std::string terms_expr;
  double terms = 1;
  /// conditioned: the growth of a sum's rounding error with its length in a case, sqrt(terms), or
  /// terms / (2 ratio_k) on rows of equal values (scaled_for sets it).
  double length = 1;
  bool equal_values = false;  ///< the case's values are all equal (length is linear)
  /// conditioned: eps_acc is the output dtype's epsilon where coarser than float32's (the op's
  /// conditioning says its terms are rounded and summed in the case's dtype: accumulate "case"; an
  /// output the op stores in float32 keeps float32's, as the failure message says).
  bool accumulate_in_case_dtype = false;
};

/// `rule` with its tolerance scaled for a case of these dims (scale_symbol; unchanged without one)
/// and, for conditioned, `terms` and `length` evaluated on them (`equal_values`: every input value
/// of the case is the same, Values::all_equal). conditioned ignores scale_symbol: its length term
/// is the growth with the sum's length that tolerance_scale approximates for allclose.
RuleConfig scaled_for(const RuleConfig& rule,
                      const std::vector<std::pair<std::string, int64_t>>& dims,
                      bool equal_values = false);

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
  /// eager_relative: max over elements of |out - oracle| / (k * max(|eager - oracle|, eps*|oracle|)
  /// + atol), and how many elements exceed 1.
  /// conditioned fills the same two fields, with its own allowance.
  double relative_worst = 0;
  int64_t relative_mismatches = 0;
  /// index: indices outside [0, n), rows holding an index twice, and indices whose selected value
  /// differs from the value the reference's index selects (in order, or as sorted rows).
  int64_t index_out_of_range = 0;
  int64_t index_duplicate_rows = 0;
  int64_t index_mismatches = 0;
  int64_t index_bound = 0;  ///< n
  /// An output with a start value (KernelInfo::output_start): the elements still holding it where
  /// the reference, in the output's dtype, holds another value. Not a failure of its own (a start
  /// value of 0 may be a right answer within the tolerance): a case the rule fails says it first.
  int64_t start_held = 0;
  double start_value = 0;
};

struct Verdict {
  Outcome outcome = Outcome::passed;
  Reason rule = Reason::none;
  double observed = 0;
  double allowed = 0;
  double margin = 0;
  std::string message;
};

/// The device reductions a rule reads (RuleSpec::needs), beyond those every output gets (errors,
/// the allclose ratio and the ULP distance against eager, the memory checks): the runtime queues
/// them for an output judged under the rule (runtime/judge_outputs.cpp) and fills Measurement.
enum class Reduction : unsigned {
  oracle = 1u << 0,  ///< errors against the float64 oracle: vs_oracle, reference_vs_oracle_max_abs
  relative = 1u << 1,   ///< relative_worst and relative_mismatches, against the oracle
  magnitude = 1u << 2,  ///< relative's allowance adds the op's magnitude (conditioned)
  index = 1u << 3,      ///< index_*: the values the indices select
};

/// One correctness rule: everything about it but the device arithmetic (which Reduction names).
struct RuleSpec {
  RuleKind
      kind;  ///< its name, reason_name(kind), is what configs, op files, --rule and reports say
  /// A user may choose it (configs, op files, --rule); index judges index outputs only.
  bool choosable;
  /// Its failure may be a tolerance too tight for the op rather than a kernel bug: it judges each
  /// element against eager (or a few times eager's error) without the op's conditioning.
  bool elementwise;
  unsigned needs;  ///< Reduction bits
  /// A tolerance against eager within which an output passes the rule, so that a timed launch it
  /// clears needs no oracle (checked timing); outside it, the rule itself judges.
  Tolerance (*eager_allowance)(const RuleConfig& rule, DType dtype);
  /// The verdict on a measurement that passed the memory and NaN/Inf checks.
  Verdict (*judge)(const RuleConfig& rule, const Measurement& m, DType dtype);
};

/// Every rule, in the order users are told them (rule_list).
const std::vector<RuleSpec>& rule_registry();
/// The rule's entry; an internal error for a reason that is no rule.
const RuleSpec& rule_spec(RuleKind kind);
const char* rule_name(RuleKind kind);
/// Whether the rule reads that reduction.
bool rule_needs(RuleKind kind, Reduction reduction);
/// rule_spec(rule.kind).eager_allowance(rule, dtype).
Tolerance eager_allowance(const RuleConfig& rule, DType dtype);
/// conditioned: eps_acc, the epsilon its magnitude term scales by, for an output of `dtype`:
/// float32's (float64's for f64 outputs), or the output dtype's where coarser when the op
/// computes in its case dtype (accumulate_in_case_dtype).
double accumulation_eps(const RuleConfig& rule, DType dtype);
/// The rules a user can choose (every kind but index), in registry order: what configs, the op
/// file schema (core/kgate-op.schema.json, checked against it by a test) and --rule accept.
const std::vector<std::string>& rule_names();
/// rule_names() in words: "allclose, ulp, ref_ratio, eager_relative or conditioned".
std::string rule_list();
/// The choosable rule of that name, else a usage error listing rule_list().
RuleKind parse_rule(const std::string& name);
/// A verdict given by a rule a user can choose (not index, memory, fault, ...).
bool chosen_rule(Reason reason);

/// What a "memory" verdict's message says for a broken guard band and for a modified input. A
/// memory verdict names every memory problem it found, joined by "; " (unwritten elements first),
/// so that one problem never hides another.
inline constexpr const char* kGuardBandChanged =
    "the kernel wrote outside its output (guard band changed)";
inline constexpr const char* kInputModified = "the kernel modified its input (checksum changed)";

/// How much further from the float64 oracle than eager a kernel that fails an elementwise rule
/// may be and still count as as accurate as eager (as_accurate_as_eager). 2: eager's own error
/// (its rounding of each product, its summation order) against a kernel's that differs from it by
/// as much in another order or with fused multiply-adds; a precision bug (bf16 inputs, an f16 sum,
/// a dropped element) is tens of times further.
inline constexpr double kAsAccurateAsEagerFactor = 2;

/// Whether a kernel that failed a case is as accurate as eager there: its largest error against
/// the float64 oracle, `kernel_vs_oracle`, is within `factor` x eager's own largest error against
/// it, `eager_vs_oracle` (both finite; eager's above 0: where eager is exact, a failing kernel is
/// not). Host-only and pure: the runner's two numbers in, the decision out.
bool as_accurate_as_eager(double kernel_vs_oracle, double eager_vs_oracle,
                          double factor = kAsAccurateAsEagerFactor);

/// A verdict of an elementwise rule (RuleSpec::elementwise: allclose and eager_relative).
bool elementwise_rule(Reason rule);

/// The section of docs/gates.md that a failure as accurate as eager points to (declaring an op's
/// conditioning): "docs/gates.md#sums-of-products-the-conditioned-rule".
inline constexpr const char* kConditioningDocs =
    "docs/gates.md#sums-of-products-the-conditioned-rule";

/// The likely cause of a failure as accurate as eager and its fix, in words: a tolerance too
/// tight for the op; declare the op's conditioning (with its magnitude) in its op file
/// (kConditioningDocs), else widen its tolerance.
std::string as_accurate_as_eager_fix();

/// What a failure's message ends with where the kernel is as accurate as eager: both errors, then
/// as_accurate_as_eager_fix(). Starts with "; ".
std::string as_accurate_as_eager_note(double kernel_vs_oracle, double eager_vs_oracle);

/// A case of a report that failed an elementwise rule while its kernel is as accurate as eager
/// (its oracle errors measured: vs_oracle.elements > 0).
bool failed_as_accurate_as_eager(const CaseResult& r);

/// What a minimal failing case's message adds when shrinking lost the note: shrinking can end on
/// a case so small (one element) that eager is exact there by luck, or that eager_relative fails
/// only at 4x eager's error. "" unless `minimal` failed an elementwise rule without being as
/// accurate as eager and `shrunk_from`, the case it was shrunk from, is (then its id, both errors
/// and the fix; starts with "; ").
std::string shrunk_from_note(const CaseResult& shrunk_from, const CaseResult& minimal);

/// Applies the memory checks, then the rule; a failed case whose output still holds its start value
/// somewhere says so first. `dtype` scales the ref_ratio floor. A case failing an elementwise
/// rule whose kernel is as accurate as eager (the oracle measured: vs_oracle.elements > 0) ends
/// its message with as_accurate_as_eager_note; the verdict stays failed.
Verdict evaluate(const RuleConfig& rule, const Measurement& m, DType dtype);

/// One output of a case as measured: its name, dtype and the rule it is judged under.
struct OutputMeasurement {
  std::string name;
  DType dtype = DType::f32;
  RuleConfig rule;
  Measurement measurement;
};

/// A case's verdict and the measurement of the output it comes from.
struct CaseVerdict {
  Verdict verdict;
  Measurement measurement;
};

/// The case's verdict from its outputs' (each evaluated under its rule): the first output that
/// fails, else the one nearest its tolerance (the largest finite margin; the first on ties). With
/// several outputs, a message names its output ("output 'y': ..."). No outputs: passed, empty.
CaseVerdict judge_case(const std::vector<OutputMeasurement>& outputs);

}  // namespace kgate::correctness
