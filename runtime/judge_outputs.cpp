// Judging a kernel's outputs (judge_outputs, runner_internal.hpp): against the eager reference and
// the float64 oracle under a rule, with the memory checks, on the device; and running a reference
// again on contiguous copies where it fails on views. Compiled in one unity group with runner.cpp
// and checked_timing.cpp (their torch headers parsed once).
#include "runtime/runner.hpp"

#include <ATen/Parallel.h>
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

#include "core/embedded_op_files.hpp"
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
#include "runtime/cuda/judge_stats.hpp"
#include "runtime/cuda/timer.hpp"
#include "runtime/torch_op.hpp"

#include "core/cost.hpp"
#include "runtime/runner_internal.hpp"

namespace kgate {
namespace runner_internal {

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

namespace {

std::optional<JudgeEngine>& engine_override() {
  static std::optional<JudgeEngine> engine;
  return engine;
}

namespace js = cuda::judge;

std::optional<js::ElemType> elem_type(at::ScalarType t) {
  switch (t) {
    case at::kDouble:
      return js::ElemType::f64;
    case at::kFloat:
      return js::ElemType::f32;
    case at::kHalf:
      return js::ElemType::f16;
    case at::kBFloat16:
      return js::ElemType::bf16;
    case at::kFloat8_e4m3fn:
      return js::ElemType::f8e4m3;
    case at::kChar:
      return js::ElemType::i8;
    case at::kByte:
      return js::ElemType::u8;
    case at::kInt:
      return js::ElemType::i32;
    case at::kLong:
      return js::ElemType::i64;
    case at::kBool:
      return js::ElemType::b8;
    default:
      return std::nullopt;
  }
}

// Whether the one pass can measure these outputs: every tensor of a type it reads, on the device
// it runs on, with the output's element count (a reference that returns another shape, or CPU
// tensors for a GPU case, is judged by the ATen operators, which say what is wrong), and a sweep
// it holds.
bool fused_can_judge(const Tensors& outputs, const Tensors& expected, const Tensors& oracle,
                     const Tensors& magnitude, size_t sweeps, at::Device device) {
  if (sweeps > static_cast<size_t>(js::kMaxSweep)) return false;
  const auto fits = [&](const Tensors& ts, bool required) {
    if (required && ts.size() < outputs.size()) return false;
    for (size_t i = 0; i < outputs.size() && i < ts.size(); ++i) {
      const at::Tensor& t = ts[i];
      if (!t.defined()) {
        if (required) return false;
        continue;
      }
      const bool elsewhere = t.device().type() != device.type() ||
                             (device.has_index() && t.device().index() != device.index());
      if (!elem_type(t.scalar_type()) || elsewhere || t.numel() != outputs[i].numel()) return false;
    }
    return true;
  };
  return fits(outputs, true) && fits(expected, true) && fits(oracle, true) &&
         fits(magnitude, false);
}

// A job's operand: `t` made contiguous (kept alive in `keep`).
js::Operand operand(const at::Tensor& t, std::vector<at::Tensor>& keep) {
  keep.push_back(t.contiguous());
  return {keep.back().const_data_ptr(), *elem_type(t.scalar_type())};
}

// Queues the jobs' figures on `q`: one pass on the device, or a loop here on the cpu backend.
// Returns the slot of the first job's first word.
size_t queue_fused(const std::vector<js::OutputJob>& jobs, at::Device device, DeviceScalars& q) {
  const int64_t words = static_cast<int64_t>(jobs.size()) * js::kStatsWords;
  auto stats = at::empty({words}, at::TensorOptions().dtype(at::kLong).device(device));
  auto* to = reinterpret_cast<js::OutputStats*>(stats.data_ptr<int64_t>());
  if (device.is_cuda()) {
    const auto scratch = at::empty({static_cast<int64_t>(js::scratch_bytes(jobs))},
                                   at::TensorOptions().dtype(at::kByte).device(device));
    KGATE_CUDA_CALL(js::launch_judge_stats(
        jobs, to, scratch.data_ptr(), at::cuda::getCurrentCUDAStream(device.index()).stream()));
  } else {
    js::judge_stats_host(jobs, to, [](int64_t n, const std::function<void(int64_t)>& body) {
      at::parallel_for(0, n, 1, [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c) body(c);
      });
    });
  }
  return q.add_words(stats);
}

}  // namespace

JudgeEngine judge_engine() {
  if (engine_override()) return *engine_override();
  static const std::optional<JudgeEngine> from_env = []() -> std::optional<JudgeEngine> {
    const char* v = std::getenv("KGATE_JUDGE");
    if (!v || !*v) return std::nullopt;
    const std::string s = v;
    if (s == "fused") return JudgeEngine::fused;
    if (s == "aten") return JudgeEngine::aten;
    throw Error(ErrorKind::usage,
                "KGATE_JUDGE='" + s + "' is not an engine: fused or aten (or leave it unset)");
  }();
  return from_env ? *from_env : JudgeEngine::fused;
}

void set_judge_engine(std::optional<JudgeEngine> engine) { engine_override() = engine; }

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
    conditioned |= correctness::rule_needs(output_rule(rule, op.tensor_dtype(o, c.dtype), o).kind,
                                           correctness::Reduction::magnitude);
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
    {
      const cost::Scope eager("reference");
      expected = on_copies_if_it_fails([&](const Tensors& in) { return ref.eager(in, attrs); },
                                       ref_inputs);
    }
    if (with_oracle || conditioned) {
      const cost::Scope oracle_scope("oracle");
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
    result.rule = Reason::reference_error;
    result.message = std::string("reference error (the op's, not the kernel's): ") + e.what();
    if (device.is_cuda() && cudaDeviceSynchronize() != cudaSuccess) {
      cudaGetLastError();
      result.message += "; the reference faulted on the GPU";
    }
    return false;
  }

  // Every output is judged: floating outputs under the rule, integer outputs exactly; every
  // output gets the memory checks. The figures come from one pass over each output (fused) or
  // from the ATen operators it restates; the index rule and a start value's check are ATen's.
  const bool fused =
      judge_engine() == JudgeEngine::fused &&
      fused_can_judge(outputs, expected, oracle, magnitude, sweep_rtols.size(), device);
  // A position-weighted sum of the outputs' bits: two runs that differ in any element differ here.
  std::vector<size_t> fingerprints;
  if (!fused)
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
  struct PerOutput {
    DType dtype;
    PendingComparison vs_reference, vs_oracle, reference_vs_oracle;
    std::optional<size_t> max_ulp;
    std::optional<size_t> unwritten, start_held;
    std::optional<size_t> relative_worst, relative_mismatches;
    std::optional<size_t> index_out_of_range, index_duplicate_rows, index_mismatches;
    int64_t index_bound = 0;
    cuda::judge::OutputJob job;  // fused: what the pass measured
  };
  std::vector<PerOutput> per(outputs.size());
  std::vector<at::Tensor> operands;  // fused: the contiguous tensors the pass reads
  // What the case's verdict is judged from (correctness::judge_case), filled as each is measured.
  std::vector<correctness::OutputMeasurement> measured(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    PerOutput& p = per[i];
    p.dtype = from_scalar_type(outputs[i].scalar_type());
    const int64_t numel = outputs[i].numel();
    const bool same_dtype = expected[i].scalar_type() == outputs[i].scalar_type();
    cuda::judge::OutputJob& job = p.job;
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
      // A one-byte poison is a value kernels write: it marks an element unwritten only where the
      // reference holds another value (where they agree, the element is right either way).
      const bool where_expected_differs = dtype_size(p.dtype) == 1 && same_dtype;
      if (fused) {
        job.unwritten = true;
        job.poison = poison_pattern(p.dtype, *poison);
        job.poison_where_expected_differs = where_expected_differs;
      } else {
        const auto poison_value = poison_bits(p.dtype, device, *poison);
        auto unwritten = outputs[i].contiguous().view(bits_type(p.dtype)).eq(poison_value);
        if (where_expected_differs)
          unwritten = unwritten.logical_and(
              expected[i].contiguous().view(bits_type(p.dtype)).ne(poison_value));
        p.unwritten = q.add_int(unwritten.sum());
      }
    }
    const bool floating = is_floating(p.dtype);
    const auto& out_rule = measured[i].rule = output_rule(rule, p.dtype, op.outputs[i]);
    measured[i].name = op.outputs[i].name;
    measured[i].dtype = p.dtype;
    const auto tol = out_rule.tolerance;
    const double edge =
        floating ? dtype_max(p.dtype) * (1 - out_rule.ratio_k * dtype_eps(p.dtype)) : 0;
    const bool relative =
        correctness::rule_needs(out_rule.kind, correctness::Reduction::relative) && numel > 0;
    const bool conditioned_here =
        correctness::rule_needs(out_rule.kind, correctness::Reduction::magnitude) &&
        i < magnitude.size() && magnitude[i].defined();
    // The rounding scale of a float32 accumulation (float64's for f64 outputs), whatever the
    // storage dtype: a sum kept in f16 or bf16 is a bug, not another summation order; unless the
    // op declares its arithmetic in the case's dtype.
    const double eps_acc = correctness::accumulation_eps(out_rule, p.dtype);
    const bool ulp = floating && numel > 0 && same_dtype;
    if (fused) {
      job.count = numel;
      job.out = operand(outputs[i], operands);
      job.expected = operand(expected[i], operands);
      job.oracle = operand(oracle[i], operands);
      job.atol = tol.atol;
      job.rtol = tol.rtol;
      job.edge = edge;
      if (i == 0) {
        job.sweeps = static_cast<int>(sweep_rtols.size());
        std::copy(sweep_rtols.begin(), sweep_rtols.end(), job.sweep_rtol);
      }
      job.with_oracle = with_oracle;
      job.relative = relative;
      job.conditioned = relative && conditioned_here;
      if (job.conditioned) job.magnitude = operand(magnitude[i], operands);
      job.ratio_k = out_rule.ratio_k;
      job.eps = dtype_eps(p.dtype);
      job.eps_acc = eps_acc;
      job.length = out_rule.length;
      job.ulp = ulp;
      job.fingerprint = numel > 0;
      job.fingerprint_offset = static_cast<int64_t>(2 * i + 1);
    } else {
      const auto out64 = outputs[i].to(at::kDouble);
      const auto ref64 = expected[i].to(at::kDouble);
      p.vs_reference = PendingComparison(q, out64, ref64, tol, Compare::allclose,
                                         i == 0 ? sweep_rtols : std::vector<double>{}, edge);
      if (with_oracle) {  // else both stay empty: no oracle ran
        p.vs_oracle = PendingComparison(q, out64, oracle[i].to(at::kDouble), tol, Compare::stats);
        p.reference_vs_oracle =
            PendingComparison(q, ref64, oracle[i].to(at::kDouble), tol, Compare::max_abs);
      }
      if (relative) {
        // Element by element: |out - oracle| <= k * max(|eager - oracle|, eps * |oracle|) + atol;
        // conditioned adds eps_acc * (sum |terms| + sqrt(terms) * |oracle|) inside the max.
        const auto o64 = oracle[i].to(at::kDouble);
        const auto finite = at::isfinite(out64) & at::isfinite(o64) & at::isfinite(ref64);
        const auto zero = at::zeros_like(out64);
        const auto err = at::where(finite, (out64 - o64).abs(), zero);
        const auto own = at::where(finite, (ref64 - o64).abs(), zero);
        auto scale = at::maximum(own, dtype_eps(p.dtype) * o64.abs());
        if (conditioned_here) {
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
      if (ulp) {
        const auto finite = at::isfinite(out64) & at::isfinite(ref64);
        const auto distance =
            (ordered_bits(outputs[i], p.dtype) - ordered_bits(expected[i].contiguous(), p.dtype))
                .abs();
        p.max_ulp = q.add_int(at::where(finite, distance, at::zeros_like(distance)).max());
      }
    }
    if (correctness::rule_needs(out_rule.kind, correctness::Reduction::index) && numel > 0) {
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
  }
  std::optional<size_t> fused_words;
  if (fused) {
    std::vector<cuda::judge::OutputJob> jobs;
    for (const auto& p : per) jobs.push_back(p.job);
    fused_words = queue_fused(jobs, device, q);
  }
  q.fetch();
  std::vector<cuda::judge::OutputStats> stats(fused ? outputs.size() : 0);
  for (size_t i = 0; i < stats.size(); ++i)
    q.words(*fused_words + i * cuda::judge::kStatsWords, cuda::judge::kStatsWords, &stats[i]);

  if (fused) {
    bool any = false;
    uint64_t fp = 0;
    for (size_t i = 0; i < outputs.size(); ++i)
      if (per[i].job.fingerprint) {
        fp = fp * 1000003u + static_cast<uint64_t>(stats[i].fingerprint);
        any = true;
      }
    if (any) result.output_fingerprint = fp;
  } else if (!fingerprints.empty()) {
    uint64_t fp = 0;
    for (size_t slot : fingerprints) fp = fp * 1000003u + static_cast<uint64_t>(q.i(slot));
    result.output_fingerprint = fp;
  }
  bool inputs_modified = false, guards_intact_all = true;
  for (size_t slot : memory.inputs_changed)
    if (q.i(slot) != 0) inputs_modified = true;
  for (size_t slot : memory.guards_broken)
    if (q.i(slot) != 0) guards_intact_all = false;
  // The case's verdict (correctness::judge_case): the first output that fails, else the one
  // nearest its tolerance.
  for (size_t i = 0; i < outputs.size(); ++i) {
    PerOutput& p = per[i];
    correctness::Measurement& m = measured[i].measurement;
    m.inputs_modified = inputs_modified;
    m.guard_bands_intact = guards_intact_all;
    if (fused) {
      const auto& s = stats[i];
      const auto& job = p.job;
      if (job.count > 0) {
        m.vs_reference.max_abs = s.ref_max_abs;
        m.vs_reference.max_rel = s.ref_max_rel;
        m.vs_reference.mismatches = s.ref_mismatches;
        m.vs_reference.nan_mismatches = s.ref_nan_mismatches;
        m.vs_reference.elements = job.count;
        m.allclose_worst = s.worst_ratio;
        m.worst_element = "element " + std::to_string(s.worst_index) + ": got " + g(s.worst_out) +
                          ", expected " + g(s.worst_target);
        if (job.with_oracle) {
          m.vs_oracle.max_abs = s.oracle_max_abs;
          m.vs_oracle.max_rel = s.oracle_max_rel;
          m.vs_oracle.nan_mismatches = s.oracle_nan_mismatches;
          m.vs_oracle.elements = job.count;
          m.reference_vs_oracle_max_abs = s.reference_vs_oracle_max_abs;
        }
      }
      if (i == 0 && !sweep_rtols.empty())
        result.needed_atol.assign(s.needed_atol, s.needed_atol + sweep_rtols.size());
      if (job.unwritten) m.vs_reference.unwritten += s.unwritten;
      if (job.ulp) m.max_ulp = static_cast<double>(s.max_ulp);
      if (job.relative) {
        m.relative_worst = s.relative_worst;
        m.relative_mismatches = s.relative_mismatches;
      }
    } else {
      m.vs_reference = p.vs_reference.resolve(q, &m.allclose_worst, &m.worst_element);
      if (i == 0 && !sweep_rtols.empty())
        result.needed_atol = p.vs_reference.needed_atol(q, sweep_rtols.size());
      m.vs_oracle = p.vs_oracle.resolve(q, nullptr, nullptr);
      m.reference_vs_oracle_max_abs = p.reference_vs_oracle.resolve(q, nullptr, nullptr).max_abs;
      if (p.max_ulp) m.max_ulp = static_cast<double>(q.i(*p.max_ulp));
      if (p.relative_worst) {
        m.relative_worst = q.d(*p.relative_worst);
        m.relative_mismatches = q.i(*p.relative_mismatches);
      }
    }
    if (p.unwritten) m.vs_reference.unwritten += q.i(*p.unwritten);
    if (p.start_held) {
      m.start_held = q.i(*p.start_held);
      m.start_value = *starts[i];
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
}  // namespace kgate
