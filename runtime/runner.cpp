// The runner: its lifetime and public API (runner.hpp), a case's check (check_case) and the judging
// of its outputs. Checked timing (Runner::time_case) is in checked_timing.cpp; what both use is in
// runner_internal.hpp. With references/, the one place that includes torch headers.
#include "runtime/runner.hpp"

#include <ATen/TensorOperators.h>  // the tensor arithmetic below (it brings ATen/Functions.h)
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/isclose.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/isinf.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <torch/headeronly/version.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <tuple>

#include "core/error.hpp"
#include "core/expr.hpp"
#include "core/format.hpp"
#include "core/rng.hpp"
#include "core/safe_text.hpp"
#include "gates/props/generators.hpp"
#include "gates/speed/speed_of_light.hpp"
#include "references/catalogue.hpp"
#include "references/op_reference.hpp"
#include "runtime/cuda/check.hpp"
#include "runtime/cuda/compare.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/cuda/timer.hpp"
#include "runtime/embedded_op_files.hpp"
#include "runtime/torch_op.hpp"

#include "runtime/runner_internal.hpp"

namespace kgate {
namespace runner_internal {

// Canary bytes on each side of every output: 256, so that every output starts 256-byte aligned (as
// a fresh allocation does) and a package's guard can predict its alignment (guard.require's
// align_T).
constexpr int64_t kGuardBytes = 256;
constexpr uint8_t kGuardByte = 0xA5;

// Per input of `op`, whether an output is written into it in place (an output's alias).
std::vector<bool> written_in_place(const OpSignature& op, size_t inputs) {
  std::vector<bool> in_place(inputs, false);
  for (const auto& o : op.outputs)
    if (const int k = op.alias_input(o); k >= 0 && static_cast<size_t>(k) < inputs)
      in_place[static_cast<size_t>(k)] = true;
  return in_place;
}

// Poison NaNs with a payload no arithmetic produces, so "never written" differs from "wrote NaN".
// The payload is drawn per run and case from `salt` (Runner's, from the system's random source),
// so a kernel cannot learn one pattern and tell a check from real use: a quiet NaN whose payload
// is neither 0 (the canonical NaN of IEEE arithmetic) nor all ones (CUDA's), with either sign.
at::Tensor poison_bits(DType dtype, at::Device device, uint64_t salt) {
  const uint64_t r = salt * 0x9E3779B97F4A7C15ULL ^ (salt >> 29);
  const auto payload = [&](int bits) {  // in [1, 2^bits - 2]
    const uint64_t span = (uint64_t{1} << bits) - 2;
    return 1 + (r >> 8) % span;
  };
  const uint64_t sign = r & 1;
  switch (dtype) {
    case DType::f16:
      return at::full({1},
                      static_cast<int16_t>(static_cast<uint16_t>(sign << 15 | 0x7E00 | payload(9))),
                      at::TensorOptions().dtype(at::kShort).device(device));
    case DType::bf16:
      return at::full({1},
                      static_cast<int16_t>(static_cast<uint16_t>(sign << 15 | 0x7FC0 | payload(6))),
                      at::TensorOptions().dtype(at::kShort).device(device));
    case DType::f32:
      return at::full(
          {1}, static_cast<int32_t>(static_cast<uint32_t>(sign << 31 | 0x7FC00000u | payload(22))),
          at::TensorOptions().dtype(at::kInt).device(device));
    case DType::f64:
      return at::full({1}, static_cast<int64_t>(sign << 63 | 0x7FF8000000000000ULL | payload(51)),
                      at::TensorOptions().dtype(at::kLong).device(device));
    // Integers have no NaN: a value far outside any index or count range an op produces.
    case DType::i32:
      return at::full({1}, static_cast<int32_t>(0x7FADBEEF),
                      at::TensorOptions().dtype(at::kInt).device(device));
    case DType::i64:
      return at::full({1}, static_cast<int64_t>(0x7FFFDEADBEEF0001LL),
                      at::TensorOptions().dtype(at::kLong).device(device));
    // One-byte dtypes: every pattern but bool's 0xA5 is a value a kernel may write (fp8's 0x7F is
    // its NaN, int8's -128 lies outside symmetric quantization's range), so an element holding the
    // poison counts as unwritten only where the reference holds something else (unwritten_mask).
    case DType::i8:
      return at::full({1}, static_cast<int8_t>(-128),
                      at::TensorOptions().dtype(at::kChar).device(device));
    case DType::u8:
    case DType::b8:
      return at::full({1}, static_cast<int8_t>(static_cast<uint8_t>(0xA5)),
                      at::TensorOptions().dtype(at::kChar).device(device));
    case DType::f8e4m3:
      return at::full({1}, static_cast<int8_t>(0x7F),
                      at::TensorOptions().dtype(at::kChar).device(device));
  }
  throw Error(ErrorKind::internal, "no poison pattern for this dtype");
}

at::ScalarType bits_type(DType dtype) {
  switch (dtype_size(dtype)) {
    case 1:
      return at::kChar;
    case 2:
      return at::kShort;
    case 4:
      return at::kInt;
    default:
      return at::kLong;
  }
}

TensorView view_of(const at::Tensor& t) {
  TensorView v;
  v.data = t.data_ptr();
  v.dtype = from_scalar_type(t.scalar_type());
  v.sizes = t.sizes().vec();
  v.strides = t.strides().vec();
  return v;
}

// An output with guard bands: [guard | output | guard] in one allocation.
struct GuardedOutput {
  at::Tensor buffer;  // whole allocation
  at::Tensor output;  // the view handed to the kernel
  int64_t numel = 0;
  int64_t guard_elements = 0;  // on each side: kGuardBytes of the dtype
};

// `prefill`: the output holds earlier, finite values instead of the poison (a "written before"
// check: a kernel that writes only where it sees the poison leaves them, and fails).
// `start`: the kernel reads the output before it writes it (KernelInfo::output_start): it holds
// that value instead, whatever the check.
GuardedOutput make_output(const std::vector<int64_t>& shape, DType dtype, at::Device device,
                          uint64_t salt, bool prefill, std::optional<double> start) {
  GuardedOutput g;
  g.numel = 1;
  for (int64_t s : shape) g.numel *= s;
  g.guard_elements = kGuardBytes / static_cast<int64_t>(dtype_size(dtype));
  g.buffer = at::empty({g.numel + 2 * g.guard_elements},
                       at::TensorOptions().dtype(to_scalar_type(dtype)).device(device));
  g.buffer.view(at::kByte).fill_(kGuardByte);
  g.output = g.buffer.narrow(0, g.guard_elements, g.numel).view(shape);
  if (start) {
    g.output.fill_(*start);
    return g;
  }
  if (prefill && is_floating(dtype)) {
    g.output.copy_(at::randn(shape, at::TensorOptions().dtype(at::kFloat)).to(g.output.options()));
    return g;
  }
  g.output.view(bits_type(dtype))
      .copy_(poison_bits(dtype, device, salt).expand({g.numel}).view(shape));
  return g;
}

// The outputs of one timed kernel arm (no guard bands, no poison): a new tensor of each output's
// dtype, or, for an output written in place, the arm's own copy of that input, which replaces it
// in `arm_inputs` (so that one arm's updates never reach another's inputs).
Tensors arm_outputs(const OpSignature& op, const Case& c, Tensors& arm_inputs, at::Device device) {
  Tensors out;
  for (const auto& o : op.outputs) {
    if (const int k = op.alias_input(o); k >= 0) {
      auto& input = arm_inputs[static_cast<size_t>(k)];
      input = input.clone();
      out.push_back(input);
      continue;
    }
    out.push_back(at::empty(
        concrete_shape(o.shape, c),
        at::TensorOptions().dtype(to_scalar_type(op.tensor_dtype(o, c.dtype))).device(device)));
  }
  return out;
}

// Each output's start value (KernelInfo::output_start) in the op's order; none for an output
// written in place (it holds its input). A name that is no output of the op is the kernel's error.
Starts output_starts(const OpSignature& op, const KernelInfo* kernel) {
  Starts out(op.outputs.size());
  if (!kernel) return out;
  for (const auto& [name, value] : kernel->output_start) {
    const auto it = std::find_if(op.outputs.begin(), op.outputs.end(),
                                 [&](const TensorSpec& o) { return o.name == name; });
    if (it == op.outputs.end() || op.alias_input(*it) >= 0) {
      std::string names;
      for (const auto& o : op.outputs)
        if (op.alias_input(o) < 0) names += (names.empty() ? "" : ", ") + o.name;
      throw Error(ErrorKind::usage,
                  "kernel '" + kernel->name + "' (" + kernel->source +
                      ") gives a start value for '" + name + "', which is not an output of op '" +
                      op.name + "' that the kernel writes" +
                      (it == op.outputs.end() ? "" : " (it is written in place)") +
                      "; its outputs: " + names);
    }
    out[static_cast<size_t>(it - op.outputs.begin())] = value;
  }
  return out;
}

// The rule an output is judged under: the case's rule for floating outputs; integer outputs
// (indices, counts) must be exact.
correctness::RuleConfig output_rule(const correctness::RuleConfig& rule, DType dtype,
                                    const TensorSpec& spec) {
  if (is_floating(dtype)) return rule;
  correctness::RuleConfig exact = rule;
  if (!spec.index_into.empty()) {
    exact.kind = correctness::RuleKind::index;
    return exact;
  }
  exact.kind = correctness::RuleKind::allclose;
  exact.tolerance = Tolerance{0, 0};
  return exact;
}

// 1 when both guard bands still hold the canary bytes.
at::Tensor guards_intact(const GuardedOutput& g) {
  const int64_t elem = static_cast<int64_t>(g.buffer.element_size());
  auto bytes = g.buffer.view(at::kByte);
  auto head = bytes.narrow(0, 0, g.guard_elements * elem);
  auto tail = bytes.narrow(0, (g.guard_elements + g.numel) * elem, g.guard_elements * elem);
  return head.eq(kGuardByte).all().logical_and(tail.eq(kGuardByte).all());
}

// Bitwise snapshot of an input (NaN-safe comparison later).
at::Tensor bits_snapshot(const at::Tensor& t) {
  return t.contiguous().view(bits_type(from_scalar_type(t.scalar_type()))).clone();
}

std::string g(double v) { return format_number(v, "%.6g"); }

// Ordered integer image of float bits, so ULP distance is a difference.
at::Tensor ordered_bits(const at::Tensor& t, DType dtype) {
  auto b = t.contiguous().view(bits_type(dtype)).to(at::kLong);
  const size_t size = dtype_size(dtype);
  const int64_t mask = size == 1   ? 0x7F
                       : size == 2 ? 0x7FFF
                       : size == 4 ? 0x7FFFFFFFLL
                                   : 0x7FFFFFFFFFFFFFFFLL;
  return at::where(b < 0, -(b.bitwise_and(mask)), b);
}

// How much of a comparison to queue: the largest absolute error only, every ErrorStats field, or
// those and the allclose ratio with its worst element.
enum class Compare { max_abs, stats, allclose };

// Error statistics and the allclose ratio of `out` against `target` (both float64), queued on the
// device; resolve() fills them in after DeviceScalars::fetch().
class PendingComparison {
 public:
  PendingComparison() = default;
  /// `sweep_rtols` (allclose only): also queue, per rtol, the smallest atol with which allclose
  /// passes, max over finite elements of (|out - target| - rtol * |target|), at least 0.
  /// `overflow_boundary` (> 0): an element that is +-Inf on one side and, on the other, finite of
  /// the same sign and at least this large is no NaN/Inf mismatch: a sum that lands at the dtype's
  /// largest value rounds to it or overflows depending on its order (a correct f16 GEMM against
  /// eager at K = 16384).
  PendingComparison(DeviceScalars& q, const at::Tensor& out, const at::Tensor& target,
                    const Tolerance& tol, Compare what, const std::vector<double>& sweep_rtols = {},
                    double overflow_boundary = 0)
      : elements_(out.numel()), what_(what) {
    if (elements_ == 0) return;
    const auto finite = at::isfinite(out) & at::isfinite(target);
    const auto diff = at::where(finite, (out - target).abs(), at::zeros_like(out));
    max_abs_ = q.add_double(diff.max());
    if (what == Compare::max_abs) return;
    const auto both_nan = at::isnan(out) & at::isnan(target);
    auto mismatch = (~finite) & (~both_nan) & out.ne(target);
    if (overflow_boundary > 0) {
      const auto at_edge = [&](const at::Tensor& inf, const at::Tensor& other) {
        return at::isinf(inf) & at::isfinite(other) & other.abs().ge(overflow_boundary) &
               (inf.sign() == other.sign());
      };
      mismatch = mismatch & ~(at_edge(out, target) | at_edge(target, out));
    }
    nan_mismatches_ = q.add_int(mismatch.sum());
    const auto mag = target.abs();
    max_rel_ = q.add_double(at::where(finite & mag.gt(0), diff / mag, at::zeros_like(out)).max());
    if (what != Compare::allclose) return;
    const auto allowed = tol.atol + tol.rtol * at::where(finite, mag, at::zeros_like(mag));
    // A zero allowance (an exact op such as embedding, or --atol 0 --rtol 0): equal passes (0, not
    // 0/0), any difference fails (Inf).
    const auto exact = at::where(diff.gt(0), at::full_like(diff, INFINITY), at::zeros_like(diff));
    const auto ratio =
        at::where(finite, at::where(allowed.gt(0), diff / allowed, exact), at::zeros_like(out));
    mismatches_ = q.add_int(ratio.gt(1.0).sum());
    for (double rtol : sweep_rtols)
      needed_atol_.push_back(q.add_double(
          at::where(finite, (diff - rtol * mag).clamp_min(0), at::zeros_like(diff)).max()));
    const auto flat = ratio.reshape({-1});
    const auto idx = flat.argmax().reshape({1});
    worst_index_ = q.add_int(idx);
    worst_ratio_ = q.add_double(flat.index_select(0, idx));
    worst_out_ = q.add_double(out.reshape({-1}).index_select(0, idx));
    worst_target_ = q.add_double(target.reshape({-1}).index_select(0, idx));
  }

  /// Per sweep rtol, the smallest passing atol (empty unless sweep rtols were queued; zeros for an
  /// empty output).
  std::vector<double> needed_atol(const DeviceScalars& q, size_t count) const {
    std::vector<double> out(count, 0.0);
    for (size_t i = 0; i < needed_atol_.size() && i < count; ++i) out[i] = q.d(needed_atol_[i]);
    return out;
  }

  ErrorStats resolve(const DeviceScalars& q, double* allclose_worst, std::string* worst) const {
    ErrorStats s;
    s.elements = elements_;
    if (elements_ == 0) return s;
    s.max_abs = q.d(max_abs_);
    if (what_ == Compare::max_abs) return s;
    s.nan_mismatches = q.i(nan_mismatches_);
    s.max_rel = q.d(max_rel_);
    if (what_ == Compare::allclose) {
      s.mismatches = q.i(mismatches_);
      if (allclose_worst) *allclose_worst = q.d(worst_ratio_);
      if (worst)
        *worst = "element " + std::to_string(q.i(worst_index_)) + ": got " + g(q.d(worst_out_)) +
                 ", expected " + g(q.d(worst_target_));
    }
    return s;
  }

 private:
  int64_t elements_ = 0;
  Compare what_ = Compare::stats;
  size_t nan_mismatches_ = 0, max_abs_ = 0, max_rel_ = 0, mismatches_ = 0, worst_index_ = 0,
         worst_ratio_ = 0, worst_out_ = 0, worst_target_ = 0;
  std::vector<size_t> needed_atol_;
};

// Runs a reference on `in`; where it throws on inputs that are views (strided, padded, offset)
// and the device is still sound, runs it again on contiguous copies and sets `note` to the first
// failure. A fault, or a failure on plain inputs, is rethrown: that is the reference's error.
Tensors run_reference_on_copies_if_it_fails(const std::function<Tensors(const Tensors&)>& run,
                                            const Tensors& in, bool cuda, std::string& note,
                                            bool copies_first) {
  bool views = false;
  for (const auto& t : in) views |= !t.is_contiguous() || t.storage_offset() != 0;
  // Fresh copies, not contiguous(): an offset view is contiguous, and would come back as itself.
  const auto copies_of = [](const Tensors& from) {
    Tensors copies;
    for (const auto& t : from) copies.push_back(t.clone(at::MemoryFormat::Contiguous));
    return copies;
  };
  if (copies_first && views) {
    const Tensors copies = copies_of(in);
    note = "the reference faulted on this layout in an earlier worker and ran on contiguous copies";
    return run(copies);
  }
  try {
    return run(in);
  } catch (const std::exception& e) {
    if (cuda && cudaDeviceSynchronize() != cudaSuccess) throw;
    if (!views) throw;
    Tensors out = run(copies_of(in));
    const std::string what = e.what();
    note = "the reference failed on this layout (" +
           what.substr(0, std::min(what.find('\n'), size_t{200})) +
           ") and ran on contiguous copies";
    return out;
  }
}

// Judges `outputs`, written by a kernel from `ref_inputs` (the inputs as they were before the
// launch), against the eager reference and the fp64 oracle under `rule`, and fills `result`'s
// verdict fields. `poison`: the salt of the NaN poison the outputs held before the launch, so that
// elements left holding it count as unwritten (nullopt: they held something else, and an unwritten
// element shows as a wrong value); `floating_prefilled`: floating outputs held earlier values
// instead; `starts`: outputs that held their start value (Measurement::start_held). Returns false,
// with `result` invalid (rule reference_error), when the op's reference fails: that is the op's
// problem, never blamed on the kernel. Without `with_oracle` the fp64 oracle is not run (the eager
// reference stands in for it): for rules that judge against eager only (allclose, ulp, index),
// where it would change no verdict.
bool judge_outputs(const OpSignature& op, const OpReference& ref, const Case& c,
                   const correctness::RuleConfig& rule, const Attributes& attrs,
                   const Tensors& ref_inputs, const Tensors& outputs, DeviceScalars& q,
                   const MemorySlots& memory, std::optional<uint64_t> poison,
                   bool floating_prefilled, const Starts& starts, at::Device device,
                   const std::vector<double>& sweep_rtols, CaseResult& result, bool with_oracle,
                   bool references_on_copies) {
  // The references first: an op file's reference that fails is the op file's problem, reported
  // as such for this case and never blamed on the kernel.
  Tensors expected, oracle, magnitude;
  // conditioned: the magnitude (sum |terms| per element), where the op declares its conditioning.
  bool conditioned = false;
  for (const auto& o : op.outputs)
    conditioned |= output_rule(rule, op.tensor_dtype(o, c.dtype), o).kind ==
                   correctness::RuleKind::conditioned;
  conditioned = conditioned && !op.conditioning_terms.empty();
  // A reference that fails on the case's layout (a view it cannot take) but runs on contiguous
  // copies judges from the copies, and the verdict says so. A fault is not retried.
  std::string layout_note;
  auto on_copies_if_it_fails = [&](const std::function<Tensors(const Tensors&)>& run,
                                   const Tensors& in) {
    return run_reference_on_copies_if_it_fails(run, in, device.is_cuda(), layout_note,
                                               references_on_copies);
  };
  // The oracle's inputs: floating inputs in float64 but those the op keeps in their dtype.
  auto upcast_inputs = [&] {
    Tensors upcast;
    for (size_t i = 0; i < ref_inputs.size(); ++i) {
      const bool keep = !ref_inputs[i].is_floating_point() ||
                        (i < op.inputs.size() && op.inputs[i].keep_dtype_in_oracle);
      upcast.push_back(keep ? ref_inputs[i] : ref_inputs[i].to(at::kDouble));
    }
    return upcast;
  };
  try {
    expected =
        on_copies_if_it_fails([&](const Tensors& in) { return ref.eager(in, attrs); }, ref_inputs);
    if (with_oracle || conditioned) {
      const Tensors upcast = upcast_inputs();
      oracle =
          on_copies_if_it_fails([&](const Tensors& in) { return ref.oracle(in, attrs); }, upcast);
      if (conditioned) {
        if (ref.magnitude) {
          magnitude = on_copies_if_it_fails(
              [&](const Tensors& in) { return ref.magnitude(in, attrs); }, upcast);
        } else {
          Tensors absolute;
          for (const auto& t : upcast) absolute.push_back(t.is_floating_point() ? t.abs() : t);
          magnitude = ref.oracle(absolute, attrs);
        }
        for (size_t i = 0; i < outputs.size(); ++i)
          if (is_floating(from_scalar_type(outputs[i].scalar_type())) &&
              (i >= magnitude.size() || magnitude[i].sizes() != outputs[i].sizes()))
            throw ReferenceError(
                "op '" + op.name + "' (" + op.origin + "): the magnitude of output '" +
                op.outputs[i].name + "' has shape " +
                (i < magnitude.size() ? c10::str(magnitude[i].sizes()) : std::string("(none)")) +
                ", the op declares " + c10::str(outputs[i].sizes()) + " for this case");
      }
    } else {
      oracle = expected;
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      const auto& name = op.outputs[i].name;
      if (i >= expected.size() || i >= oracle.size())
        throw ReferenceError("op '" + op.name + "': the reference returned no output '" + name +
                             "'");
      if (expected[i].sizes() != outputs[i].sizes() || oracle[i].sizes() != outputs[i].sizes())
        throw ReferenceError("op '" + op.name + "' (" + op.origin + "): output '" + name +
                             "' of the reference has shape " + c10::str(expected[i].sizes()) +
                             " (oracle " + c10::str(oracle[i].sizes()) + "), the op declares " +
                             c10::str(outputs[i].sizes()) + " for this case");
    }
  } catch (const std::exception& e) {
    // A built-in reference's ATen call throws c10::Error, an op file's a ReferenceError: either
    // is the op's. (The kernel's own faults surfaced at the synchronize after its launch.)
    result.outcome = Outcome::invalid;
    result.rule = "reference_error";
    result.message = std::string("reference error (the op's, not the kernel's): ") + e.what();
    if (device.is_cuda() && cudaDeviceSynchronize() != cudaSuccess) {
      cudaGetLastError();
      result.message += "; the reference faulted on the GPU";
    }
    return false;
  }

  // A position-weighted sum of the outputs' bits: two runs that differ in any element differ here.
  std::vector<size_t> fingerprints;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].numel() == 0) continue;
    const auto bits = outputs[i]
                          .contiguous()
                          .view(bits_type(from_scalar_type(outputs[i].scalar_type())))
                          .reshape({-1})
                          .to(at::kLong);
    const auto weights = at::arange(bits.numel(), bits.options())
                             .mul(2654435761LL)
                             .add(static_cast<int64_t>(2 * i + 1));
    fingerprints.push_back(q.add_int(bits.mul(weights).sum()));
  }
  // Every output is judged: floating outputs under the rule, integer outputs exactly; every
  // output gets the memory checks.
  struct PerOutput {
    DType dtype;
    PendingComparison vs_reference, vs_oracle, reference_vs_oracle;
    std::optional<size_t> max_ulp;
    std::optional<size_t> unwritten, start_held;
    std::optional<size_t> relative_worst, relative_mismatches;
    std::optional<size_t> index_out_of_range, index_duplicate_rows, index_mismatches;
    int64_t index_bound = 0;
  };
  std::vector<PerOutput> per(outputs.size());
  // What the case's verdict is judged from (correctness::judge_case), filled as each is measured.
  std::vector<correctness::OutputMeasurement> measured(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    PerOutput& p = per[i];
    p.dtype = from_scalar_type(outputs[i].scalar_type());
    // An in-place output holds the input's values, not poison: an element left unwritten shows
    // as a wrong value instead.
    if (i < memory.unwritten.size() && memory.unwritten[i]) {
      p.unwritten = memory.unwritten[i];
    } else if (i < starts.size() && starts[i]) {
      // The start value the kernel reads is a value it may leave as the answer: only where the
      // reference (in the output's dtype) holds another, and the case fails, is it named.
      const double start = *starts[i];
      const auto held = outputs[i].to(at::kDouble).eq(start) &
                        expected[i].to(outputs[i].scalar_type()).to(at::kDouble).ne(start);
      p.start_held = q.add_int(held.sum());
    } else if (poison && op.alias_input(op.outputs[i]) < 0 &&
               !(floating_prefilled && is_floating(p.dtype))) {
      const auto poison_value = poison_bits(p.dtype, device, *poison);
      auto unwritten = outputs[i].contiguous().view(bits_type(p.dtype)).eq(poison_value);
      // A one-byte poison is a value kernels write: it marks an element unwritten only where the
      // reference holds another value (where they agree, the element is right either way).
      if (dtype_size(p.dtype) == 1 && expected[i].scalar_type() == outputs[i].scalar_type())
        unwritten = unwritten.logical_and(
            expected[i].contiguous().view(bits_type(p.dtype)).ne(poison_value));
      p.unwritten = q.add_int(unwritten.sum());
    }
    const bool floating = is_floating(p.dtype);
    const auto& out_rule = measured[i].rule = output_rule(rule, p.dtype, op.outputs[i]);
    measured[i].name = op.outputs[i].name;
    measured[i].dtype = p.dtype;
    const auto tol = out_rule.tolerance;
    const auto out64 = outputs[i].to(at::kDouble);
    const auto ref64 = expected[i].to(at::kDouble);
    const double edge =
        floating ? dtype_max(p.dtype) * (1 - out_rule.ratio_k * dtype_eps(p.dtype)) : 0;
    p.vs_reference = PendingComparison(q, out64, ref64, tol, Compare::allclose,
                                       i == 0 ? sweep_rtols : std::vector<double>{}, edge);
    if (with_oracle) {  // else both stay empty: no oracle ran
      p.vs_oracle = PendingComparison(q, out64, oracle[i].to(at::kDouble), tol, Compare::stats);
      p.reference_vs_oracle =
          PendingComparison(q, ref64, oracle[i].to(at::kDouble), tol, Compare::max_abs);
    }
    const bool relative = out_rule.kind == correctness::RuleKind::eager_relative ||
                          out_rule.kind == correctness::RuleKind::conditioned;
    if (relative && out64.numel() > 0) {
      // Element by element: |out - oracle| <= k * max(|eager - oracle|, eps * |oracle|) + atol;
      // conditioned adds eps_acc * (sum |terms| + sqrt(terms) * |oracle|) inside the max.
      const auto o64 = oracle[i].to(at::kDouble);
      const auto finite = at::isfinite(out64) & at::isfinite(o64) & at::isfinite(ref64);
      const auto zero = at::zeros_like(out64);
      const auto err = at::where(finite, (out64 - o64).abs(), zero);
      const auto own = at::where(finite, (ref64 - o64).abs(), zero);
      auto scale = at::maximum(own, dtype_eps(p.dtype) * o64.abs());
      if (out_rule.kind == correctness::RuleKind::conditioned && i < magnitude.size() &&
          magnitude[i].defined()) {
        // The rounding scale of a float32 accumulation (float64's for f64 outputs), whatever the
        // storage dtype: a sum kept in f16 or bf16 is a bug, not another summation order.
        const double eps_acc = dtype_eps(p.dtype == DType::f64 ? DType::f64 : DType::f32);
        const auto m64 = magnitude[i].to(at::kDouble).abs();
        const auto sum_scale =
            eps_acc * (at::where(at::isfinite(m64), m64, zero) + out_rule.length * o64.abs());
        scale = at::maximum(scale, at::where(finite, sum_scale, zero));
      }
      const auto allowed = out_rule.ratio_k * scale + tol.atol;
      const auto ratio = at::where(allowed.gt(0), err / allowed,
                                   at::where(err.gt(0), at::full_like(err, INFINITY), zero));
      p.relative_worst = q.add_double(ratio.max());
      p.relative_mismatches = q.add_int(ratio.gt(1.0).sum());
    }
    if (out_rule.kind == correctness::RuleKind::index && out64.numel() > 0) {
      const int src = [&] {
        for (size_t k = 0; k < op.inputs.size(); ++k)
          if (op.inputs[k].name == op.outputs[i].index_into) return static_cast<int>(k);
        return -1;
      }();
      const at::Tensor& x = ref_inputs.at(static_cast<size_t>(src));
      const int64_t n = x.size(-1);
      p.index_bound = n;
      const auto idx = outputs[i].to(at::kLong);
      const auto in_range = idx.ge(0) & idx.lt(n);
      p.index_out_of_range = q.add_int((~in_range).sum());
      const auto safe = idx.clamp(0, std::max<int64_t>(n - 1, 0));
      if (idx.size(-1) > 1) {
        const auto sorted = std::get<0>(idx.sort(-1));
        const auto dup =
            sorted.narrow(-1, 1, sorted.size(-1) - 1).eq(sorted.narrow(-1, 0, sorted.size(-1) - 1));
        p.index_duplicate_rows = q.add_int(dup.any(-1).sum());
      } else {
        p.index_duplicate_rows = q.add_int(at::zeros({}, idx.options()));
      }
      auto mine = x.gather(-1, safe).to(at::kDouble);
      auto theirs = x.gather(-1, expected[i].to(at::kLong).clamp(0, std::max<int64_t>(n - 1, 0)))
                        .to(at::kDouble);
      if (op.outputs[i].index_order == "any") {
        mine = std::get<0>(mine.sort(-1));
        theirs = std::get<0>(theirs.sort(-1));
      }
      const auto same = mine.eq(theirs) | (at::isnan(mine) & at::isnan(theirs));
      p.index_mismatches = q.add_int(((~same) & in_range).sum());
    }
    if (floating && out64.numel() > 0 && expected[i].scalar_type() == outputs[i].scalar_type()) {
      const auto finite = at::isfinite(out64) & at::isfinite(ref64);
      const auto ulp =
          (ordered_bits(outputs[i], p.dtype) - ordered_bits(expected[i].contiguous(), p.dtype))
              .abs();
      p.max_ulp = q.add_int(at::where(finite, ulp, at::zeros_like(ulp)).max());
    }
  }
  q.fetch();

  if (!fingerprints.empty()) {
    uint64_t fp = 0;
    for (size_t slot : fingerprints) fp = fp * 1000003u + static_cast<uint64_t>(q.i(slot));
    result.output_fingerprint = fp;
  }
  bool inputs_modified = false, guards_intact_all = true;
  for (size_t slot : memory.inputs_changed)
    if (q.i(slot) != 0) inputs_modified = true;
  for (size_t slot : memory.guards_ok)
    if (q.i(slot) == 0) guards_intact_all = false;
  // The case's verdict (correctness::judge_case): the first output that fails, else the one
  // nearest its tolerance.
  for (size_t i = 0; i < outputs.size(); ++i) {
    PerOutput& p = per[i];
    correctness::Measurement& m = measured[i].measurement;
    m.inputs_modified = inputs_modified;
    m.guard_bands_intact = guards_intact_all;
    m.vs_reference = p.vs_reference.resolve(q, &m.allclose_worst, &m.worst_element);
    if (i == 0 && !sweep_rtols.empty())
      result.needed_atol = p.vs_reference.needed_atol(q, sweep_rtols.size());
    m.vs_oracle = p.vs_oracle.resolve(q, nullptr, nullptr);
    m.reference_vs_oracle_max_abs = p.reference_vs_oracle.resolve(q, nullptr, nullptr).max_abs;
    if (p.unwritten) m.vs_reference.unwritten += q.i(*p.unwritten);
    if (p.start_held) {
      m.start_held = q.i(*p.start_held);
      m.start_value = *starts[i];
    }
    if (p.max_ulp) m.max_ulp = static_cast<double>(q.i(*p.max_ulp));
    if (p.relative_worst) {
      m.relative_worst = q.d(*p.relative_worst);
      m.relative_mismatches = q.i(*p.relative_mismatches);
    }
    if (p.index_out_of_range) {
      m.index_out_of_range = q.i(*p.index_out_of_range);
      m.index_duplicate_rows = q.i(*p.index_duplicate_rows);
      m.index_mismatches = q.i(*p.index_mismatches);
      m.index_bound = p.index_bound;
    }
  }
  correctness::CaseVerdict judged = correctness::judge_case(measured);
  // Judged without the oracle (checked timing under allclose) and failed an elementwise rule: the
  // oracle's errors are measured now, for this failing case alone, so that its message can say
  // whether the kernel is as accurate as eager (correctness::as_accurate_as_eager). An oracle that
  // fails here leaves the verdict as it is: it is a note's, not the case's.
  if (!with_oracle && judged.verdict.outcome == Outcome::failed &&
      correctness::elementwise_rule(judged.verdict.rule)) {
    try {
      std::string ignored;
      const Tensors late = run_reference_on_copies_if_it_fails(
          [&](const Tensors& in) { return ref.oracle(in, attrs); }, upcast_inputs(),
          device.is_cuda(), ignored, references_on_copies);
      DeviceScalars late_q;
      std::vector<std::pair<PendingComparison, PendingComparison>> late_errors(outputs.size());
      for (size_t i = 0; i < outputs.size() && i < late.size(); ++i) {
        if (!is_floating(per[i].dtype) || late[i].sizes() != outputs[i].sizes()) continue;
        const auto o64 = late[i].to(at::kDouble);
        const Tolerance tol = measured[i].rule.tolerance;
        late_errors[i] = {
            PendingComparison(late_q, outputs[i].to(at::kDouble), o64, tol, Compare::max_abs),
            PendingComparison(late_q, expected[i].to(at::kDouble), o64, tol, Compare::max_abs)};
      }
      late_q.fetch();
      for (size_t i = 0; i < outputs.size(); ++i) {
        measured[i].measurement.vs_oracle = late_errors[i].first.resolve(late_q, nullptr, nullptr);
        measured[i].measurement.reference_vs_oracle_max_abs =
            late_errors[i].second.resolve(late_q, nullptr, nullptr).max_abs;
      }
      judged = correctness::judge_case(measured);
    } catch (const std::exception&) {
      if (device.is_cuda()) cudaGetLastError();
    }
  }
  const correctness::Verdict& verdict = judged.verdict;
  const correctness::Measurement& m = judged.measurement;
  result.outcome = verdict.outcome;
  result.rule = verdict.rule;
  result.observed = verdict.observed;
  result.allowed = verdict.allowed;
  result.margin = verdict.margin;
  result.message = verdict.message;
  result.vs_reference = m.vs_reference;
  result.vs_oracle = m.vs_oracle;
  result.reference_vs_oracle_max_abs = m.reference_vs_oracle_max_abs;
  result.guard_bands_intact = m.guard_bands_intact;
  result.inputs_modified = m.inputs_modified;
  if (!layout_note.empty())
    result.message = result.message.empty() ? layout_note : result.message + "; " + layout_note;
  return true;
}

}  // namespace runner_internal

using namespace runner_internal;

Runner::Runner(Backend backend) : impl_(std::make_unique<Impl>()) {
  impl_->poison_salt = system_random();
  impl_->backend = backend;
  if (backend == Backend::cuda) {
    // Before any module loads: the launch records name each kernel's code by its module's CUBIN.
    cuda::watch_modules();
    std::string why;
    if (!cuda::device_available(&why)) throw Error(ErrorKind::device, why);
    impl_->device = at::Device(at::kCUDA, 0);
  }
}

Runner::~Runner() = default;

Backend Runner::backend() const { return impl_->backend; }
bool Runner::context_lost() const { return impl_->context_lost; }

void Runner::set_references_on_copies(bool on) { impl_->references_on_copies = on; }

RunnerEnvironment Runner::environment() const {
  RunnerEnvironment env;
  env.torch = std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) +
              "." + std::to_string(TORCH_VERSION_PATCH);
  if (impl_->backend == Backend::cuda) {
    const auto info = cuda::device_info();
    // Name, architecture, and which GPU: the ordinal selected (--device, or CTest's) and the UUID
    // (nvidia-smi -L), so that a report from a runner of several GPUs says which one it timed.
    env.device = info.name + " (sm_" + std::to_string(info.sm_major) +
                 std::to_string(info.sm_minor) + ", " + std::to_string(info.multiprocessors) +
                 " SMs; " + (info.selected.empty() ? std::string("device 0") : info.selected) +
                 ", " + info.uuid + ")";
    env.driver = info.driver;
    env.cuda = info.runtime;
  } else {
    env.device = "cpu";
  }
  return env;
}

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string gib(double bytes) {
  std::ostringstream o;
  o.precision(1);
  o << std::fixed << bytes / kGiB << " GiB";
  return o.str();
}

// Why a huge case cannot run here ("" when it can): the cpu backend, or too little free device
// memory for its tensors, their snapshots and the checks (the float64 oracle's upcast inputs and
// comparisons too, where the case is judged whole).
std::string huge_refusal(const OpSignature& op, const Case& c, Backend backend) {
  if (backend != Backend::cuda)
    return "a huge case (past 2^31 elements) runs on the cuda backend only";
  const bool sliced = !props::slice_symbol(op).empty();
  double need = 0, largest_input = 0;
  auto elements = [&](const TensorSpec& t) {
    double n = 1;
    for (int64_t d : concrete_shape(t.shape, c)) n *= static_cast<double>(d);
    return n;
  };
  for (const auto& t : op.inputs) {
    const double n = elements(t),
                 size = static_cast<double>(dtype_size(op.tensor_dtype(t, c.dtype)));
    need +=
        n * (3 * size + 1) + (sliced ? 0 : n * 8);  // tensor, snapshot, its re-read, a mask; upcast
    largest_input = std::max(largest_input, n);
  }
  need += largest_input * 8;  // values are drawn in float64, then converted
  for (const auto& t : op.outputs) {
    const double n = elements(t),
                 size = static_cast<double>(dtype_size(op.tensor_dtype(t, c.dtype)));
    need += n * (2 * size + 1) +
            (sliced ? 0 : n * (size + 8 * 12));  // the comparisons' float64 temporaries
  }
  need = need * 1.25 + 2 * kGiB;
  c10::cuda::CUDACachingAllocator::emptyCache();
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    cudaGetLastError();
    return "skipped: the device's free memory could not be read for a huge case";
  }
  if (static_cast<double>(free) >= need) return "";
  return "skipped: the huge case needs about " + gib(need) + " of device memory (" +
         (sliced ? "judged on slices of its rows" : "judged whole, with its float64 oracle") +
         "); the device has " + gib(static_cast<double>(free)) + " free of " +
         gib(static_cast<double>(total));
}

// A huge case judged on slices: the rows of `symbol` that props::huge_rows picks (the first, the
// middle, and all from the row holding element 2^31 to the end) are gathered from the references'
// inputs and from the kernel's outputs, which the checks below then judge as a case of those rows.
// Unwritten elements are counted over the whole outputs first (except one-byte dtypes, whose
// poison is a value, and outputs with a start value: those are judged on the slices, where the
// reference tells them apart).
void judge_slices(const OpSignature& op, const Case& c, const std::string& symbol, Tensors& outputs,
                  Tensors& ref_inputs, std::vector<std::optional<size_t>>& whole_unwritten,
                  DeviceScalars& q, at::Device device, uint64_t poison_salt, bool prefilled,
                  const Starts& starts) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const DType dtype = from_scalar_type(outputs[i].scalar_type());
    if (op.alias_input(op.outputs[i]) >= 0 || (prefilled && is_floating(dtype)) ||
        dtype_size(dtype) == 1 || starts[i])
      continue;
    whole_unwritten[i] = q.add_int(
        outputs[i].view(bits_type(dtype)).eq(poison_bits(dtype, device, poison_salt)).sum());
  }
  const auto rows_list = props::huge_rows(op, c, symbol);
  const auto rows = at::tensor(rows_list, at::TensorOptions().dtype(at::kLong)).to(device);
  for (size_t i = 0; i < outputs.size(); ++i) outputs[i] = outputs[i].index_select(0, rows);
  for (size_t i = 0; i < ref_inputs.size() && i < op.inputs.size(); ++i)
    if (!op.inputs[i].shape.empty() && op.inputs[i].shape[0] == symbol)
      ref_inputs[i] = ref_inputs[i].index_select(0, rows);
}

}  // namespace

std::string repro_command(const std::string& kernel, const Case& c) {
  return "kgate replay --kernel " + kernel + " '" + c.id() + "'";
}

std::string repro_command(const KernelInfo& kernel, const Case& c) {
  if (kernel.package) return "kgate replay --package '" + kernel.source + "' '" + c.id() + "'";
  // An op from an op file that the kernel does not carry (given with --ops or a config) must be
  // given again for the line to work when pasted.
  std::string ops;
  if (const OpSignature* op = lookup_op(c.op);
      op && op->origin != "built-in" && kernel.op_file.empty() && !embedded_op_file(op->origin))
    ops = " --ops '" + op->origin + "'";
  return repro_command(kernel.name, c) + ops + torch_op_repro_options(kernel.name);
}

CaseResult Runner::check_case(const KernelInfo& kernel, const Case& c,
                              const correctness::RuleConfig& case_rule,
                              const std::vector<double>& sweep_rtols) {
  const correctness::RuleConfig rule =
      correctness::scaled_for(case_rule, c.dims, c.values == Values::all_equal);
  CaseResult result;
  result.kcase = c;
  result.repro = repro_command(kernel, c);
  if (impl_->context_lost) {
    // Never a failure of its own: the fault that lost the context was recorded where it happened
    // (the kernel's, or the reference's).
    result.outcome = Outcome::invalid;
    result.rule = "not_run";
    result.message = "not run: " + impl_->lost_reason;
    return result;
  }
  impl_->reference_graph = {};  // timing's, kept only from one comparison to the next
  const OpSignature& op = find_op(c.op);
  const OpReference& ref = op_reference(c.op);
  Attributes attrs = call_attributes(op, c);
  // A case past 2^31 elements runs only where the device has the memory for it (else: skipped,
  // and said); it is judged on slices of its rows where the op allows (judge_slices).
  const bool huge = props::is_huge(op, c);
  if (huge) {
    if (std::string why = huge_refusal(op, c, impl_->backend); !why.empty()) {
      result.outcome = Outcome::skipped;
      result.rule = "huge";
      result.message = why;
      return result;
    }
  }
  const Starts starts = output_starts(op, &kernel);
  bool kernel_done = false;  // launched, and finished without a fault
  try {
    const Tensors inputs = case_inputs(ref, c, op, impl_->device);
    // An input written in place (an output's alias) is the kernel's output buffer; the references
    // see a copy of it as it was, and it is exempt from the input-integrity check.
    Tensors ref_inputs = inputs;
    const std::vector<bool> in_place = written_in_place(op, inputs.size());
    for (size_t k = 0; k < inputs.size(); ++k)
      if (in_place[k]) ref_inputs[k] = inputs[k].clone();
    std::vector<at::Tensor> snapshots;
    for (const auto& t : inputs) snapshots.push_back(bits_snapshot(t));
    std::vector<GuardedOutput> guarded;
    Tensors outputs;
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      const auto& o = op.outputs[i];
      if (const int k = op.alias_input(o); k >= 0) {
        outputs.push_back(inputs[static_cast<size_t>(k)]);
        continue;
      }
      guarded.push_back(make_output(concrete_shape(o.shape, c), op.tensor_dtype(o, c.dtype),
                                    impl_->device,
                                    derive_seed(impl_->poison_salt ^ c.seed, "poison", 0),
                                    impl_->prefill_outputs, starts[i]));
      outputs.push_back(guarded.back().output);
    }
    impl_->sync();
    std::string refusal;
    try {
      refusal = impl_->refusal(kernel, inputs, outputs, attrs);
      result.fallback = impl_->launch(kernel, inputs, outputs, attrs);
      // The whole device, not the stream alone: the kernel's work on any stream is done, and its
      // asynchronous faults surface here, as its own, before any reference runs.
      if (impl_->backend == Backend::cuda) KGATE_CUDA_CALL(cudaDeviceSynchronize());
      impl_->sync();
    } catch (const ReferenceError& e) {
      // The fallback's reference failed: the op's problem, never the kernel's.
      result.outcome = Outcome::invalid;
      result.rule = "reference_error";
      result.fallback = true;
      result.message = std::string("reference error (the op's, not the kernel's): ") + e.what();
      return result;
    } catch (const std::exception& e) {
      // A device fault (illegal address, trap) leaves the context unusable: say so for the rest.
      // Whatever call noticed it (kgate's synchronize, or an ATen call in the kernel's own host
      // code, as a torch custom op makes: c10::Error), the fault is this case's.
      const std::string what = e.what();
      impl_->lose_context_if_faulted("the CUDA context was lost after kernel '" + kernel.name +
                                     "' faulted on case " + c.id());
      result.outcome = Outcome::failed;
      result.rule = "fault";
      // The kernel's error in the user's terms: which kernel, where it comes from, the CUDA error;
      // not the kgate call that noticed it.
      result.message = impl_->backend == Backend::cuda
                           ? "kernel '" + kernel.name + "' (" + kernel.source +
                                 ") faulted on the GPU: " + cuda::api_error_summary(what) +
                                 (impl_->context_lost ? "; the CUDA context is lost" : "")
                           : "kernel '" + kernel.name + "' failed to run: " + what;
      return result;
    }

    kernel_done = true;

    // Everything below is queued on the device and read back at once (DeviceScalars). The inputs
    // and guard bands are checked whole, before a huge case is cut to its slices.
    DeviceScalars q;
    std::vector<size_t> inputs_changed, guards_ok;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!in_place[i])
        inputs_changed.push_back(q.add_int(bits_snapshot(inputs[i]).ne(snapshots[i]).any()));
    for (const auto& go : guarded) guards_ok.push_back(q.add_int(guards_intact(go)));
    snapshots.clear();
    std::vector<std::optional<size_t>> whole_unwritten(outputs.size());
    if (huge) {
      if (const std::string s = props::slice_symbol(op); !s.empty())
        judge_slices(op, c, s, outputs, ref_inputs, whole_unwritten, q, impl_->device,
                     derive_seed(impl_->poison_salt ^ c.seed, "poison", 0), impl_->prefill_outputs,
                     starts);
    }

    MemorySlots memory{std::move(inputs_changed), std::move(guards_ok), std::move(whole_unwritten)};
    const std::optional<uint64_t> poison = derive_seed(impl_->poison_salt ^ c.seed, "poison", 0);
    if (!judge_outputs(op, ref, c, rule, attrs, ref_inputs, outputs, q, memory, poison,
                       impl_->prefill_outputs, starts, impl_->device, sweep_rtols, result, true,
                       impl_->references_on_copies)) {
      // A reference that faulted leaves the context unusable: the later cases say so (not run)
      // instead of blaming their kernels for it.
      impl_->lose_context_if_faulted("the CUDA context was lost when the reference of op '" +
                                     op.name + "' faulted on case " + c.id());
      return result;
    }
    if (result.fallback) {
      // The reference ran: the verdict checks the fallback wrote every output, nothing more.
      const std::string note = "fallback: outside the guard of '" + kernel.name + "' (" + refusal +
                               "); the eager reference ran instead" +
                               (impl_->fallback_note.empty() ? "" : "; " + impl_->fallback_note);
      if (result.outcome == Outcome::passed) result.rule = "fallback";
      result.message = result.message.empty() ? note : note + "; " + result.message;
    }
    return result;
  } catch (const std::exception& e) {
    // An asynchronous fault can surface in any later call (the caching allocator, a copy, a
    // synchronize). Before the launch it is this case's kernel's (the last case ended with the
    // device sound); after the kernel finished (a device-wide synchronize), the references'.
    const cudaError_t rc = impl_->lose_context_if_faulted(
        kernel_done ? "the CUDA context was lost when the reference of op '" + c.op +
                          "' faulted on case " + c.id()
                    : "the CUDA context was lost after kernel '" + kernel.name +
                          "' faulted on case " + c.id());
    if (rc != cudaSuccess) {
      const std::string what = std::string(cudaGetErrorName(rc)) + " (" + cudaGetErrorString(rc) +
                               "), first seen as: " + cuda::api_error_summary(e.what());
      if (kernel_done) {
        result.outcome = Outcome::invalid;
        result.rule = "reference_error";
        result.message =
            "reference error (the op's, not the kernel's): the reference faulted on the GPU after "
            "kernel '" +
            kernel.name + "' finished: " + what + "; the CUDA context is lost";
      } else {
        result.outcome = Outcome::failed;
        result.rule = "fault";
        result.message = "kernel '" + kernel.name + "' (" + kernel.source +
                         ") faulted on the GPU: " + what + "; the CUDA context is lost";
      }
      return result;
    }
    result.outcome = Outcome::failed;
    result.rule = "error";
    result.message = dynamic_cast<const Error*>(&e)
                         ? std::string(e.what())
                         : std::string("case could not be run: ") + e.what();
    return result;
  }
}

std::vector<double> Runner::time_launches(const KernelInfo& kernel, const Case& c, int count,
                                          bool flush_l2) {
  const OpSignature& op = find_op(c.op);
  const OpReference& ref = op_reference(c.op);
  const Attributes attrs = call_attributes(op, c);
  Tensors inputs = case_inputs(ref, c, op, impl_->device);
  const Tensors outputs = arm_outputs(op, c, inputs, impl_->device);
  auto& timer = impl_->launch_timer();
  // Between launches, unmeasured: the outputs' start values (KernelInfo::output_start), the flush.
  const Starts starts = output_starts(op, &kernel);
  const bool refill =
      std::any_of(starts.begin(), starts.end(), [](const auto& v) { return v.has_value(); });
  const bool flush = flush_l2 && impl_->flusher;
  std::function<void()> between;
  if (refill || flush)
    between = [&] {
      for (size_t i = 0; i < starts.size(); ++i)
        if (starts[i]) outputs[i].fill_(*starts[i]);
      if (flush) impl_->flusher->flush();
    };
  auto ns = timer.time([&] { impl_->launch(kernel, inputs, outputs, attrs); }, count, between);
  impl_->sync();
  return ns;
}

cuda::LaunchRecord Runner::record_launches(const KernelInfo& kernel, const Case& c) {
  cuda::LaunchRecord none;
  if (impl_->backend != Backend::cuda) {
    none.why = "kernels of the cpu backend are not recorded";
    return none;
  }
  if (impl_->context_lost) {
    none.why = "the CUDA context is lost";
    return none;
  }
  try {
    const OpSignature& op = find_op(c.op);
    const OpReference& ref = op_reference(c.op);
    const Attributes attrs = call_attributes(op, c);
    Tensors inputs = case_inputs(ref, c, op, impl_->device);
    const Tensors outputs = arm_outputs(op, c, inputs, impl_->device);
    if (!impl_->refusal(kernel, inputs, outputs, attrs).empty()) {
      none.known = true;
      none.launches = {"outside the guard"};
      return none;
    }
    impl_->launch(kernel, inputs, outputs, attrs);
    impl_->sync();
    cuda::LaunchRecorder recorder;
    impl_->launch(kernel, inputs, outputs, attrs);
    impl_->sync();
    cuda::LaunchRecord r = recorder.stop();
    if (r.known && r.launches.empty()) {  // what it ran, CUPTI's callbacks did not see
      r.known = false;
      r.why = "no launch of '" + kernel.name + "' was seen";
    }
    return r;
  } catch (const std::exception& e) {
    impl_->lose_context_if_faulted("the CUDA context was lost when '" + kernel.name +
                                   "' was launched to record its launches");
    none.known = false;
    none.why = std::string("its launch failed: ") + e.what();
    return none;
  }
}

CaseResult Runner::check_deterministic(const KernelInfo& kernel, const Case& c,
                                       const correctness::RuleConfig& rule) {
  CaseResult first = check_case(kernel, c, rule);
  if (first.outcome == Outcome::failed || first.fallback) return first;
  CaseResult second = check_case(kernel, c, rule);
  if (second.outcome == Outcome::failed) return second;
  if (first.output_fingerprint != second.output_fingerprint) {
    second.outcome = Outcome::failed;
    second.rule = "determinism";
    second.message =
        "two runs on the same input gave bitwise different outputs (a race, or an "
        "order-dependent reduction such as float atomics?)";
  }
  return second;
}

CaseResult Runner::check_stale(const KernelInfo& kernel, const Case& c,
                               const correctness::RuleConfig& rule) {
  CaseResult first = check_case(kernel, c, rule);
  if (first.outcome == Outcome::failed) return first;
  Case next = c;
  next.seed = derive_seed(c.seed, "stale", 1);
  CaseResult second = check_case(kernel, next, rule);
  if (second.outcome != Outcome::failed || second.rule == "fault") return second;
  second.message = "stale output: case " + c.id() + " passed, then case " + next.id() +
                   " (same shape, other values) failed right after it (a cached or stale "
                   "result?): " +
                   second.message;
  second.rule = "stale";
  second.kcase = c;  // the pair derives from the first case
  second.repro = repro_command(kernel, c) + "  # then " + next.id();
  return second;
}

CaseResult Runner::check_written_before(const KernelInfo& kernel, const Case& c,
                                        const correctness::RuleConfig& rule) {
  // The same case into outputs that hold earlier, finite values (as real buffers do) instead of
  // the poison: a kernel that writes only where it sees the poison, or skips work when the output
  // already looks computed, leaves them and fails.
  impl_->prefill_outputs = true;
  CaseResult r;
  try {
    r = check_case(kernel, c, rule);
  } catch (...) {
    impl_->prefill_outputs = false;
    throw;
  }
  impl_->prefill_outputs = false;
  if (r.outcome != Outcome::failed || r.rule == "fault") return r;
  r.message = "written before: case " + c.id() +
              " passes into poisoned outputs but fails into outputs that held "
              "earlier values (does the kernel look at its outputs before writing them?): " +
              r.message;
  r.rule = "written_before";
  return r;
}

}  // namespace kgate
