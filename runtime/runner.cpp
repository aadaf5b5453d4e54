// The runner (the one place, with references/, that includes torch headers).
#include "runtime/runner.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>  // the tensor arithmetic below (it brings ATen/Functions.h)
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
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/headeronly/version.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <tuple>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/expr.hpp"
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

namespace kgate {
namespace {

// Canary bytes on each side of every output: 256, so that every output starts 256-byte aligned (as
// a fresh allocation does) and a package's guard can predict its alignment (guard.require's align_T).
constexpr int64_t kGuardBytes = 256;
constexpr uint8_t kGuardByte = 0xA5;

using speed::system_random;

// Per input of `op`, whether an output is written into it in place (an output's alias).
std::vector<bool> written_in_place(const OpSignature& op, size_t inputs) {
  std::vector<bool> in_place(inputs, false);
  for (const auto& o : op.outputs)
    if (const int k = op.alias_input(o); k >= 0 && static_cast<size_t>(k) < inputs) in_place[static_cast<size_t>(k)] = true;
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
      return at::full({1}, static_cast<int16_t>(static_cast<uint16_t>(sign << 15 | 0x7E00 | payload(9))),
                      at::TensorOptions().dtype(at::kShort).device(device));
    case DType::bf16:
      return at::full({1}, static_cast<int16_t>(static_cast<uint16_t>(sign << 15 | 0x7FC0 | payload(6))),
                      at::TensorOptions().dtype(at::kShort).device(device));
    case DType::f32:
      return at::full({1}, static_cast<int32_t>(static_cast<uint32_t>(sign << 31 | 0x7FC00000u | payload(22))),
                      at::TensorOptions().dtype(at::kInt).device(device));
    case DType::f64:
      return at::full({1}, static_cast<int64_t>(sign << 63 | 0x7FF8000000000000ULL | payload(51)),
                      at::TensorOptions().dtype(at::kLong).device(device));
    // Integers have no NaN: a value far outside any index or count range an op produces.
    case DType::i32: return at::full({1}, static_cast<int32_t>(0x7FADBEEF), at::TensorOptions().dtype(at::kInt).device(device));
    case DType::i64: return at::full({1}, static_cast<int64_t>(0x7FFFDEADBEEF0001LL), at::TensorOptions().dtype(at::kLong).device(device));
    // One-byte dtypes: every pattern but bool's 0xA5 is a value a kernel may write (fp8's 0x7F is
    // its NaN, int8's -128 lies outside symmetric quantization's range), so an element holding the
    // poison counts as unwritten only where the reference holds something else (unwritten_mask).
    case DType::i8: return at::full({1}, static_cast<int8_t>(-128), at::TensorOptions().dtype(at::kChar).device(device));
    case DType::u8:
    case DType::b8: return at::full({1}, static_cast<int8_t>(static_cast<uint8_t>(0xA5)), at::TensorOptions().dtype(at::kChar).device(device));
    case DType::f8e4m3: return at::full({1}, static_cast<int8_t>(0x7F), at::TensorOptions().dtype(at::kChar).device(device));
  }
  throw Error(ErrorKind::internal, "no poison pattern for this dtype");
}

at::ScalarType bits_type(DType dtype) {
  switch (dtype_size(dtype)) {
    case 1: return at::kChar;
    case 2: return at::kShort;
    case 4: return at::kInt;
    default: return at::kLong;
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
GuardedOutput make_output(const std::vector<int64_t>& shape, DType dtype, at::Device device, uint64_t salt,
                          bool prefill, std::optional<double> start) {
  GuardedOutput g;
  g.numel = 1;
  for (int64_t s : shape) g.numel *= s;
  g.guard_elements = kGuardBytes / static_cast<int64_t>(dtype_size(dtype));
  g.buffer = at::empty({g.numel + 2 * g.guard_elements}, at::TensorOptions().dtype(to_scalar_type(dtype)).device(device));
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
  g.output.view(bits_type(dtype)).copy_(poison_bits(dtype, device, salt).expand({g.numel}).view(shape));
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
    out.push_back(at::empty(concrete_shape(o.shape, c),
                            at::TensorOptions().dtype(to_scalar_type(op.tensor_dtype(o, c.dtype))).device(device)));
  }
  return out;
}

// Each output's start value (KernelInfo::output_start) in the op's order; none for an output
// written in place (it holds its input). A name that is no output of the op is the kernel's error.
using Starts = std::vector<std::optional<double>>;
Starts output_starts(const OpSignature& op, const KernelInfo* kernel) {
  Starts out(op.outputs.size());
  if (!kernel) return out;
  for (const auto& [name, value] : kernel->output_start) {
    const auto it = std::find_if(op.outputs.begin(), op.outputs.end(), [&](const TensorSpec& o) { return o.name == name; });
    if (it == op.outputs.end() || op.alias_input(*it) >= 0) {
      std::string names;
      for (const auto& o : op.outputs)
        if (op.alias_input(o) < 0) names += (names.empty() ? "" : ", ") + o.name;
      throw Error(ErrorKind::usage, "kernel '" + kernel->name + "' (" + kernel->source + ") gives a start value for '" +
                                        name + "', which is not an output of op '" + op.name + "' that the kernel writes" +
                                        (it == op.outputs.end() ? "" : " (it is written in place)") + "; its outputs: " +
                                        names);
    }
    out[static_cast<size_t>(it - op.outputs.begin())] = value;
  }
  return out;
}

// The rule an output is judged under: the case's rule for floating outputs; integer outputs
// (indices, counts) must be exact.
correctness::RuleConfig output_rule(const correctness::RuleConfig& rule, DType dtype, const TensorSpec& spec) {
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

// Scalars computed on the device and read back in one transfer: each .item() is a device
// synchronization, and a case used to make some thirty of them (most of its time for small cases).
class DeviceScalars {
 public:
  /// Queues a 0-d (or one-element) tensor; returns its slot.
  size_t add_double(const at::Tensor& t) {
    f64_.push_back(t.reshape({}).to(at::kDouble));
    return f64_.size() - 1;
  }
  size_t add_int(const at::Tensor& t) {
    i64_.push_back(t.reshape({}).to(at::kLong));
    return i64_.size() - 1;
  }
  /// Reads every queued scalar back (one synchronization).
  void fetch() {
    std::vector<at::Tensor> all;
    if (!f64_.empty()) all.push_back(at::stack(f64_).view(at::kLong));  // bit-cast: one transfer
    if (!i64_.empty()) all.push_back(at::stack(i64_));
    if (all.empty()) return;
    const auto host = at::cat(all).to(at::kCPU);
    const int64_t* v = host.data_ptr<int64_t>();
    doubles_.resize(f64_.size());
    std::memcpy(doubles_.data(), v, f64_.size() * sizeof(double));
    ints_.assign(v + f64_.size(), v + f64_.size() + i64_.size());
  }
  double d(size_t slot) const { return doubles_.at(slot); }
  int64_t i(size_t slot) const { return ints_.at(slot); }

 private:
  std::vector<at::Tensor> f64_, i64_;
  std::vector<double> doubles_;
  std::vector<int64_t> ints_;
};

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
  const int64_t mask = size == 1 ? 0x7F : size == 2 ? 0x7FFF : size == 4 ? 0x7FFFFFFFLL : 0x7FFFFFFFFFFFFFFFLL;
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
  PendingComparison(DeviceScalars& q, const at::Tensor& out, const at::Tensor& target, const Tolerance& tol,
                    Compare what, const std::vector<double>& sweep_rtols = {}, double overflow_boundary = 0)
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
        return at::isinf(inf) & at::isfinite(other) & other.abs().ge(overflow_boundary) & (inf.sign() == other.sign());
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
    const auto ratio = at::where(finite, at::where(allowed.gt(0), diff / allowed, exact), at::zeros_like(out));
    mismatches_ = q.add_int(ratio.gt(1.0).sum());
    for (double rtol : sweep_rtols)
      needed_atol_.push_back(q.add_double(at::where(finite, (diff - rtol * mag).clamp_min(0), at::zeros_like(diff)).max()));
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
        *worst = "element " + std::to_string(q.i(worst_index_)) + ": got " + g(q.d(worst_out_)) + ", expected " +
                 g(q.d(worst_target_));
    }
    return s;
  }

 private:
  int64_t elements_ = 0;
  Compare what_ = Compare::stats;
  size_t nan_mismatches_ = 0, max_abs_ = 0, max_rel_ = 0, mismatches_ = 0, worst_index_ = 0, worst_ratio_ = 0,
         worst_out_ = 0, worst_target_ = 0;
  std::vector<size_t> needed_atol_;
};

// What a caller queued on `q` about memory before judging: per input not written in place, 1 if
// it changed; per guarded output, 1 if both guard bands hold; per output, the unwritten elements
// counted already (a huge case's slices).
struct MemorySlots {
  std::vector<size_t> inputs_changed, guards_ok;
  std::vector<std::optional<size_t>> unwritten;
};

// Runs a reference on `in`; where it throws on inputs that are views (strided, padded, offset)
// and the device is still sound, runs it again on contiguous copies and sets `note` to the first
// failure. A fault, or a failure on plain inputs, is rethrown: that is the reference's error.
Tensors run_reference_on_copies_if_it_fails(const std::function<Tensors(const Tensors&)>& run, const Tensors& in,
                                            bool cuda, std::string& note, bool copies_first = false) {
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
    note = "the reference failed on this layout (" + what.substr(0, std::min(what.find('\n'), size_t{200})) +
           ") and ran on contiguous copies";
    return out;
  }
}

// Judges `outputs`, written by a kernel from `ref_inputs` (the inputs as they were before the
// launch), against the eager reference and the fp64 oracle under `rule`, and fills `result`'s
// verdict fields. `poison`: the salt of the NaN poison the outputs held before the launch, so that
// elements left holding it count as unwritten (nullopt: they held something else, and an unwritten
// element shows as a wrong value); `floating_prefilled`: floating outputs held earlier values
// instead; `starts`: outputs that held their start value (Measurement::start_held). Returns false, with `result` invalid (rule reference_error), when the op's reference
// fails: that is the op's problem, never blamed on the kernel. Without `with_oracle` the fp64
// oracle is not run (the eager reference stands in for it): for rules that judge against eager
// only (allclose, ulp, index), where it would change no verdict.
bool judge_outputs(const OpSignature& op, const OpReference& ref, const Case& c, const correctness::RuleConfig& rule,
                   const Attributes& attrs, const Tensors& ref_inputs, const Tensors& outputs, DeviceScalars& q,
                   const MemorySlots& memory, std::optional<uint64_t> poison, bool floating_prefilled,
                   const Starts& starts, at::Device device, const std::vector<double>& sweep_rtols, CaseResult& result,
                   bool with_oracle = true, bool references_on_copies = false) {
  // The references first: an op file's reference that fails is the op file's problem, reported
  // as such for this case and never blamed on the kernel.
  Tensors expected, oracle, magnitude;
  // conditioned: the magnitude (sum |terms| per element), where the op declares its conditioning.
  bool conditioned = false;
  for (const auto& o : op.outputs)
    conditioned |= output_rule(rule, op.tensor_dtype(o, c.dtype), o).kind == correctness::RuleKind::conditioned;
  conditioned = conditioned && !op.conditioning_terms.empty();
  // A reference that fails on the case's layout (a view it cannot take) but runs on contiguous
  // copies judges from the copies, and the verdict says so. A fault is not retried.
  std::string layout_note;
  auto on_copies_if_it_fails = [&](const std::function<Tensors(const Tensors&)>& run, const Tensors& in) {
    return run_reference_on_copies_if_it_fails(run, in, device.is_cuda(), layout_note, references_on_copies);
  };
  try {
    expected = on_copies_if_it_fails([&](const Tensors& in) { return ref.eager(in, attrs); }, ref_inputs);
    if (with_oracle || conditioned) {
      Tensors upcast;
      for (size_t i = 0; i < ref_inputs.size(); ++i) {
        const bool keep = !ref_inputs[i].is_floating_point() || (i < op.inputs.size() && op.inputs[i].keep_dtype_in_oracle);
        upcast.push_back(keep ? ref_inputs[i] : ref_inputs[i].to(at::kDouble));
      }
      oracle = on_copies_if_it_fails([&](const Tensors& in) { return ref.oracle(in, attrs); }, upcast);
      if (conditioned) {
        if (ref.magnitude) {
          magnitude = on_copies_if_it_fails([&](const Tensors& in) { return ref.magnitude(in, attrs); }, upcast);
        } else {
          Tensors absolute;
          for (const auto& t : upcast) absolute.push_back(t.is_floating_point() ? t.abs() : t);
          magnitude = ref.oracle(absolute, attrs);
        }
        for (size_t i = 0; i < outputs.size(); ++i)
          if (is_floating(from_scalar_type(outputs[i].scalar_type())) &&
              (i >= magnitude.size() || magnitude[i].sizes() != outputs[i].sizes()))
            throw ReferenceError("op '" + op.name + "' (" + op.origin + "): the magnitude of output '" +
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
        throw ReferenceError("op '" + op.name + "': the reference returned no output '" + name + "'");
      if (expected[i].sizes() != outputs[i].sizes() || oracle[i].sizes() != outputs[i].sizes())
        throw ReferenceError("op '" + op.name + "' (" + op.origin + "): output '" + name + "' of the reference has shape " +
                             c10::str(expected[i].sizes()) + " (oracle " + c10::str(oracle[i].sizes()) +
                             "), the op declares " + c10::str(outputs[i].sizes()) + " for this case");
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
    const auto bits = outputs[i].contiguous().view(bits_type(from_scalar_type(outputs[i].scalar_type()))).reshape({-1}).to(at::kLong);
    const auto weights = at::arange(bits.numel(), bits.options()).mul(2654435761LL).add(static_cast<int64_t>(2 * i + 1));
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
    } else if (poison && op.alias_input(op.outputs[i]) < 0 && !(floating_prefilled && is_floating(p.dtype))) {
      const auto poison_value = poison_bits(p.dtype, device, *poison);
      auto unwritten = outputs[i].contiguous().view(bits_type(p.dtype)).eq(poison_value);
      // A one-byte poison is a value kernels write: it marks an element unwritten only where the
      // reference holds another value (where they agree, the element is right either way).
      if (dtype_size(p.dtype) == 1 && expected[i].scalar_type() == outputs[i].scalar_type())
        unwritten = unwritten.logical_and(expected[i].contiguous().view(bits_type(p.dtype)).ne(poison_value));
      p.unwritten = q.add_int(unwritten.sum());
    }
    const bool floating = is_floating(p.dtype);
    const auto& out_rule = measured[i].rule = output_rule(rule, p.dtype, op.outputs[i]);
    measured[i].name = op.outputs[i].name;
    measured[i].dtype = p.dtype;
    const auto tol = out_rule.tolerance;
    const auto out64 = outputs[i].to(at::kDouble);
    const auto ref64 = expected[i].to(at::kDouble);
    const double edge = floating ? dtype_max(p.dtype) * (1 - out_rule.ratio_k * dtype_eps(p.dtype)) : 0;
    p.vs_reference =
        PendingComparison(q, out64, ref64, tol, Compare::allclose, i == 0 ? sweep_rtols : std::vector<double>{}, edge);
    if (with_oracle) {  // else both stay empty: no oracle ran
      p.vs_oracle = PendingComparison(q, out64, oracle[i].to(at::kDouble), tol, Compare::stats);
      p.reference_vs_oracle = PendingComparison(q, ref64, oracle[i].to(at::kDouble), tol, Compare::max_abs);
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
      if (out_rule.kind == correctness::RuleKind::conditioned && i < magnitude.size() && magnitude[i].defined()) {
        // The rounding scale of a float32 accumulation (float64's for f64 outputs), whatever the
        // storage dtype: a sum kept in f16 or bf16 is a bug, not another summation order.
        const double eps_acc = dtype_eps(p.dtype == DType::f64 ? DType::f64 : DType::f32);
        const auto m64 = magnitude[i].to(at::kDouble).abs();
        const auto sum_scale = eps_acc * (at::where(at::isfinite(m64), m64, zero) + out_rule.length * o64.abs());
        scale = at::maximum(scale, at::where(finite, sum_scale, zero));
      }
      const auto allowed = out_rule.ratio_k * scale + tol.atol;
      const auto ratio = at::where(allowed.gt(0), err / allowed, at::where(err.gt(0), at::full_like(err, INFINITY), zero));
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
        const auto dup = sorted.narrow(-1, 1, sorted.size(-1) - 1).eq(sorted.narrow(-1, 0, sorted.size(-1) - 1));
        p.index_duplicate_rows = q.add_int(dup.any(-1).sum());
      } else {
        p.index_duplicate_rows = q.add_int(at::zeros({}, idx.options()));
      }
      auto mine = x.gather(-1, safe).to(at::kDouble);
      auto theirs = x.gather(-1, expected[i].to(at::kLong).clamp(0, std::max<int64_t>(n - 1, 0))).to(at::kDouble);
      if (op.outputs[i].index_order == "any") {
        mine = std::get<0>(mine.sort(-1));
        theirs = std::get<0>(theirs.sort(-1));
      }
      const auto same = mine.eq(theirs) | (at::isnan(mine) & at::isnan(theirs));
      p.index_mismatches = q.add_int(((~same) & in_range).sum());
    }
    if (floating && out64.numel() > 0 && expected[i].scalar_type() == outputs[i].scalar_type()) {
      const auto finite = at::isfinite(out64) & at::isfinite(ref64);
      const auto ulp = (ordered_bits(outputs[i], p.dtype) - ordered_bits(expected[i].contiguous(), p.dtype)).abs();
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
    if (i == 0 && !sweep_rtols.empty()) result.needed_atol = p.vs_reference.needed_atol(q, sweep_rtols.size());
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
  const correctness::CaseVerdict judged = correctness::judge_case(measured);
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
  if (!layout_note.empty()) result.message = result.message.empty() ? layout_note : result.message + "; " + layout_note;
  return true;
}

class ChronoTimer final : public cuda::LaunchTimer {
 public:
  std::vector<double> time(const std::function<void()>& launch, int count,
                           const std::function<void()>& between) override {
    std::vector<double> ns;
    for (int i = 0; i < count; ++i) {
      if (between) between();
      const auto t0 = std::chrono::steady_clock::now();
      launch();
      ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
    }
    return ns;
  }
  const char* name() const override { return "chrono"; }
};

}  // namespace

struct Runner::Impl {
  Backend backend;
  at::Device device{at::kCPU};
  bool context_lost = false;
  std::string lost_reason;
  bool references_on_copies = false;  // Runner::set_references_on_copies

  /// Where the device is broken (a fault's sticky error), marks the context lost for `reason` and
  /// returns the error; cudaSuccess where it is sound, on the cpu backend, or lost already.
  cudaError_t lose_context_if_faulted(const std::string& reason) {
    if (backend != Backend::cuda || context_lost) return cudaSuccess;
    const cudaError_t rc = cudaDeviceSynchronize();
    if (rc == cudaSuccess) return rc;
    cudaGetLastError();
    context_lost = true;
    lost_reason = reason;
    return rc;
  }
  std::unique_ptr<cuda::LaunchTimer> timer;
  std::string timer_note;
  std::unique_ptr<cuda::L2Flusher> flusher;
  std::unique_ptr<cuda::Nvml> nvml;
  /// This run's poison salt (from the system's random source), and whether the next case's outputs
  /// hold earlier values instead of the poison (Runner::check_stale).
  uint64_t poison_salt = 0;
  bool prefill_outputs = false;
  /// Checked timing's flags, in mapped page-locked host memory (grown as needed, kept): the compare
  /// kernels write them over the bus, the host clears them and reads them once the device is idle,
  /// with no CUDA call of its own (two fewer calls a block than a memset and a copy back).
  int* mapped_flags = nullptr;
  size_t mapped_count = 0;
  /// Checked timing's reference on the GPU: the buffers a checked launch's inputs are copied into
  /// (both arms'), and, after one eager call there (its kernels loaded, ATen's allocations
  /// settled), the reference captured as a CUDA graph that reads them. Kept from one comparison to
  /// the next of the same inputs and attributes (kgate calibrate's repeats): the eager call and the
  /// capture took 1.5 ms a comparison on the H200. A correctness case lets it go (its memory).
  struct ReferenceGraph {
    std::string key;  // the op, its inputs' dtypes and shapes, the attributes
    Tensors inputs;
    std::unique_ptr<at::cuda::CUDAGraph> graph;
    cudaGraphExec_t exec = nullptr;  // the graph's, launched directly (see look_reference)
    Tensors outputs;
    int calls = 0;
    bool eager_only = false;  // it could not be captured (it synchronizes, or computes on the host)
  };
  ReferenceGraph reference_graph;
  class CheckedTiming;  // one timed comparison (Runner::time_case)
  /// The stream reference graphs are captured on: one, kept.
  std::optional<at::cuda::CUDAStream> capture_stream;

  ~Impl() {
    if (mapped_flags) cudaFreeHost(mapped_flags);
  }
  int* flags_on_host(size_t count) {
    if (count > mapped_count) {
      if (mapped_flags) KGATE_CUDA_CALL(cudaFreeHost(mapped_flags));
      mapped_flags = nullptr;
      KGATE_CUDA_CALL(cudaHostAlloc(reinterpret_cast<void**>(&mapped_flags), count * sizeof(int), cudaHostAllocMapped));
      mapped_count = count;
    }
    return mapped_flags;
  }

  void* stream() const {
    return backend == Backend::cuda ? static_cast<void*>(at::cuda::getCurrentCUDAStream().stream()) : nullptr;
  }

  void sync() {
    if (backend != Backend::cuda) return;
    KGATE_CUDA_CALL(cudaGetLastError());
    KGATE_CUDA_CALL(cudaStreamSynchronize(static_cast<cudaStream_t>(stream())));
  }

  KernelCall make_call(const Tensors& inputs, const Tensors& outputs, const Attributes& attrs) const {
    KernelCall call;
    for (const auto& t : inputs) call.inputs.push_back(view_of(t));
    for (const auto& t : outputs) call.outputs.push_back(view_of(t));
    call.attributes = attrs;
    call.stream = stream();
    return call;
  }

  /// Launches `kernel`, or, for a call outside its guard (KernelInfo::accepts says no), runs the
  /// op's eager reference into the outputs as deployed code falls back. Returns true on fallback.
  bool launch(const KernelInfo& kernel, const Tensors& inputs, const Tensors& outputs, const Attributes& attrs) {
    const KernelCall call = make_call(inputs, outputs, attrs);
    if (kernel.accepts && !kernel.accepts(call)) {
      const Tensors expected = fallback_reference(kernel, inputs, attrs);
      const OpSignature& op = find_op(kernel.op);
      for (size_t i = 0; i < outputs.size(); ++i) {
        const std::string name = i < op.outputs.size() ? op.outputs[i].name : std::to_string(i);
        if (i >= expected.size())
          throw ReferenceError("op '" + op.name + "' (" + op.origin + "): the reference returned no output '" + name + "'");
        // The op's shape, not the reference's: a reference of another shape is the op file's error.
        if (expected[i].sizes() != outputs[i].sizes())
          throw ReferenceError("op '" + op.name + "' (" + op.origin + "): output '" + name + "' of the reference has shape " +
                               c10::str(expected[i].sizes()) + ", the op declares " + c10::str(outputs[i].sizes()) +
                               " for this case");
        auto out = outputs[i];  // a view: copy_ writes through it
        out.copy_(expected[i]);
      }
      return true;
    }
    kernel.launch(call);
    return false;
  }

  /// The fallback's eager reference. It is the op's code, not the kernel's: an error in it (a
  /// throw, or a fault of the device) is a ReferenceError. Where it fails on the case's layout
  /// but runs on contiguous copies, the copies' result is used and fallback_note says so.
  std::string fallback_note;
  Tensors fallback_reference(const KernelInfo& kernel, const Tensors& inputs, const Attributes& attrs) {
    fallback_note.clear();
    const OpReference& ref = op_reference(kernel.op);
    auto faulted = [&](const std::string& what) {
      if (lose_context_if_faulted("the CUDA context was lost when the reference of op '" + kernel.op + "' faulted") !=
          cudaSuccess) {
        throw ReferenceError("the eager reference of op '" + kernel.op + "' (the fallback outside the guard of '" +
                             kernel.name + "') faulted on the GPU: " + cuda::api_error_summary(what) +
                             "; the CUDA context is lost");
      }
    };
    try {
      Tensors out = run_reference_on_copies_if_it_fails(
          [&](const Tensors& in) {
            Tensors r = ref.eager(in, attrs);
            sync();  // an asynchronous fault of the reference surfaces here, as the reference's
            return r;
          },
          inputs, backend == Backend::cuda, fallback_note, references_on_copies);
      if (!fallback_note.empty()) fallback_note += ": deployed code that falls back fails here";
      return out;
    } catch (const std::exception& e) {
      faulted(e.what());
      throw ReferenceError("the eager reference of op '" + kernel.op + "' (the fallback outside the guard of '" +
                           kernel.name + "') failed: " + e.what());
    }
  }

  /// Why `kernel` refuses the call of these tensors ("" when it accepts it).
  std::string refusal(const KernelInfo& kernel, const Tensors& inputs, const Tensors& outputs,
                      const Attributes& attrs) const {
    if (!kernel.accepts) return {};
    const KernelCall call = make_call(inputs, outputs, attrs);
    if (kernel.accepts(call)) return {};
    std::string why = kernel.rejection_reason ? kernel.rejection_reason(call) : std::string();
    return why.empty() ? "outside the kernel's guard" : why;
  }

  /// Speed of light's ceiling: the copy bandwidth, measured at the first timed case that has a
  /// floor (each process measures it; nothing kept on disk can be edited into a lower ceiling).
  /// 0 off the GPU, or when the copy failed (light_note says why).
  double light_ceiling_bytes_per_s = -1;
  double l2_bytes = 0;
  std::string light_note;
  double light_ceiling() {
    if (light_ceiling_bytes_per_s >= 0) return light_ceiling_bytes_per_s;
    light_ceiling_bytes_per_s = 0;
    if (backend != Backend::cuda) return 0;
    launch_timer();
    try {
      l2_bytes = static_cast<double>(cuda::device_info().l2_bytes);
      light_ceiling_bytes_per_s = cuda::copy_bandwidth(stream(), *timer, *flusher);
    } catch (const Error& e) {
      light_note = std::string("no speed-of-light ceiling: ") + e.what();
    }
    return light_ceiling_bytes_per_s;
  }

  cuda::LaunchTimer& launch_timer() {
    if (!timer) {
      if (backend == Backend::cuda) {
        timer = cuda::make_best_timer(stream(), &timer_note);
        flusher = std::make_unique<cuda::L2Flusher>(stream());
        nvml = std::make_unique<cuda::Nvml>();
      } else {
        timer = std::make_unique<ChronoTimer>();
      }
    }
    return *timer;
  }
};

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
  env.torch = std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
              std::to_string(TORCH_VERSION_PATCH);
  if (impl_->backend == Backend::cuda) {
    const auto info = cuda::device_info();
    // Name, architecture, and which GPU: the ordinal selected (--device, or CTest's) and the UUID
    // (nvidia-smi -L), so that a report from a runner of several GPUs says which one it timed.
    env.device = info.name + " (sm_" + std::to_string(info.sm_major) + std::to_string(info.sm_minor) + ", " +
                 std::to_string(info.multiprocessors) + " SMs; " +
                 (info.selected.empty() ? std::string("device 0") : info.selected) + ", " + info.uuid + ")";
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
  if (backend != Backend::cuda) return "a huge case (past 2^31 elements) runs on the cuda backend only";
  const bool sliced = !props::slice_symbol(op).empty();
  double need = 0, largest_input = 0;
  auto elements = [&](const TensorSpec& t) {
    double n = 1;
    for (int64_t d : concrete_shape(t.shape, c)) n *= static_cast<double>(d);
    return n;
  };
  for (const auto& t : op.inputs) {
    const double n = elements(t), size = static_cast<double>(dtype_size(op.tensor_dtype(t, c.dtype)));
    need += n * (3 * size + 1) + (sliced ? 0 : n * 8);  // tensor, snapshot, its re-read, a mask; upcast
    largest_input = std::max(largest_input, n);
  }
  need += largest_input * 8;  // values are drawn in float64, then converted
  for (const auto& t : op.outputs) {
    const double n = elements(t), size = static_cast<double>(dtype_size(op.tensor_dtype(t, c.dtype)));
    need += n * (2 * size + 1) + (sliced ? 0 : n * (size + 8 * 12));  // the comparisons' float64 temporaries
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
         (sliced ? "judged on slices of its rows" : "judged whole, with its float64 oracle") + "); the device has " +
         gib(static_cast<double>(free)) + " free of " + gib(static_cast<double>(total));
}

// A huge case judged on slices: the rows of `symbol` that props::huge_rows picks (the first, the
// middle, and all from the row holding element 2^31 to the end) are gathered from the references'
// inputs and from the kernel's outputs, which the checks below then judge as a case of those rows.
// Unwritten elements are counted over the whole outputs first (except one-byte dtypes, whose
// poison is a value, and outputs with a start value: those are judged on the slices, where the
// reference tells them apart).
void judge_slices(const OpSignature& op, const Case& c, const std::string& symbol, Tensors& outputs,
                  Tensors& ref_inputs, std::vector<std::optional<size_t>>& whole_unwritten, DeviceScalars& q,
                  at::Device device, uint64_t poison_salt, bool prefilled, const Starts& starts) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const DType dtype = from_scalar_type(outputs[i].scalar_type());
    if (op.alias_input(op.outputs[i]) >= 0 || (prefilled && is_floating(dtype)) || dtype_size(dtype) == 1 || starts[i])
      continue;
    whole_unwritten[i] = q.add_int(outputs[i].view(bits_type(dtype)).eq(poison_bits(dtype, device, poison_salt)).sum());
  }
  const auto rows_list = props::huge_rows(op, c, symbol);
  const auto rows = at::tensor(rows_list, at::TensorOptions().dtype(at::kLong)).to(device);
  for (size_t i = 0; i < outputs.size(); ++i) outputs[i] = outputs[i].index_select(0, rows);
  for (size_t i = 0; i < ref_inputs.size() && i < op.inputs.size(); ++i)
    if (!op.inputs[i].shape.empty() && op.inputs[i].shape[0] == symbol) ref_inputs[i] = ref_inputs[i].index_select(0, rows);
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

CaseResult Runner::check_case(const KernelInfo& kernel, const Case& c, const correctness::RuleConfig& case_rule,
                              const std::vector<double>& sweep_rtols) {
  const correctness::RuleConfig rule = correctness::scaled_for(case_rule, c.dims, c.values == Values::all_equal);
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
      guarded.push_back(make_output(concrete_shape(o.shape, c), op.tensor_dtype(o, c.dtype), impl_->device,
                                    derive_seed(impl_->poison_salt ^ c.seed, "poison", 0), impl_->prefill_outputs,
                                    starts[i]));
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
      impl_->lose_context_if_faulted("the CUDA context was lost after kernel '" + kernel.name + "' faulted on case " +
                                     c.id());
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
      if (!in_place[i]) inputs_changed.push_back(q.add_int(bits_snapshot(inputs[i]).ne(snapshots[i]).any()));
    for (const auto& go : guarded) guards_ok.push_back(q.add_int(guards_intact(go)));
    snapshots.clear();
    std::vector<std::optional<size_t>> whole_unwritten(outputs.size());
    if (huge) {
      if (const std::string s = props::slice_symbol(op); !s.empty())
        judge_slices(op, c, s, outputs, ref_inputs, whole_unwritten, q, impl_->device,
                     derive_seed(impl_->poison_salt ^ c.seed, "poison", 0), impl_->prefill_outputs, starts);
    }

    MemorySlots memory{std::move(inputs_changed), std::move(guards_ok), std::move(whole_unwritten)};
    const std::optional<uint64_t> poison = derive_seed(impl_->poison_salt ^ c.seed, "poison", 0);
    if (!judge_outputs(op, ref, c, rule, attrs, ref_inputs, outputs, q, memory, poison, impl_->prefill_outputs, starts,
                       impl_->device, sweep_rtols, result, true, impl_->references_on_copies)) {
      // A reference that faulted leaves the context unusable: the later cases say so (not run)
      // instead of blaming their kernels for it.
      impl_->lose_context_if_faulted("the CUDA context was lost when the reference of op '" + op.name +
                                     "' faulted on case " + c.id());
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
        kernel_done ? "the CUDA context was lost when the reference of op '" + c.op + "' faulted on case " + c.id()
                    : "the CUDA context was lost after kernel '" + kernel.name + "' faulted on case " + c.id());
    if (rc != cudaSuccess) {
      const std::string what = std::string(cudaGetErrorName(rc)) + " (" + cudaGetErrorString(rc) +
                               "), first seen as: " + cuda::api_error_summary(e.what());
      if (kernel_done) {
        result.outcome = Outcome::invalid;
        result.rule = "reference_error";
        result.message = "reference error (the op's, not the kernel's): the reference faulted on the GPU after kernel '" +
                         kernel.name + "' finished: " + what + "; the CUDA context is lost";
      } else {
        result.outcome = Outcome::failed;
        result.rule = "fault";
        result.message = "kernel '" + kernel.name + "' (" + kernel.source + ") faulted on the GPU: " + what +
                         "; the CUDA context is lost";
      }
      return result;
    }
    result.outcome = Outcome::failed;
    result.rule = "error";
    result.message = dynamic_cast<const Error*>(&e) ? std::string(e.what()) : std::string("case could not be run: ") + e.what();
    return result;
  }
}

namespace {

}  // namespace

namespace cuda {
cudaError_t launch_swap_elements(void* a, void* b, int size, cudaStream_t stream);  // l2_flush.cu
}  // namespace cuda

namespace {

// A tolerance against the eager reference that implies the rule: an output within it of eager
// passes `rule` (so a timed launch that it clears needs no oracle). allclose: the rule's own.
// eager_relative (|out - oracle| <= k max(|eager - oracle|, eps |oracle|) + atol): since
// |out - oracle| <= |out - eager| + |eager - oracle|, |out - eager| <= (k - 1) eps |eager| / 2 +
// atol suffices (|eager| <= 2 max(|oracle|, |eager - oracle|)). ulp: max_ulp eps |eager| / 2 (an
// ulp is at least eps |x| / 2). ref_ratio and index: the floor or exact. Outside it, the rule
// itself judges.
Tolerance lean_tolerance(const correctness::RuleConfig& rule, DType dtype) {
  const double eps = dtype_eps(dtype);
  switch (rule.kind) {
    case correctness::RuleKind::allclose: return rule.tolerance;
    case correctness::RuleKind::eager_relative:
    case correctness::RuleKind::conditioned:  // (its allowance holds eager_relative's)
      return Tolerance{rule.tolerance.atol, std::max(0.0, rule.ratio_k - 1) * eps / 2};
    case correctness::RuleKind::ulp: return Tolerance{0, rule.max_ulp * eps / 2};
    case correctness::RuleKind::ref_ratio: return Tolerance{rule.ratio_floor, 0};
    case correctness::RuleKind::index: return Tolerance{0, 0};
  }
  return Tolerance{0, 0};
}

// Appends `text` to a comparison's note, "; " between the parts.
void add_note(std::string& note, const std::string& text) { note += (note.empty() ? "" : "; ") + text; }

using speed::CheckedArms;
using speed::TimingInvalid;
using speed::WrongWhileTimed;

// NVML as checked timing's device monitor.
class NvmlMonitor final : public speed::DeviceMonitor {
 public:
  explicit NvmlMonitor(const cuda::Nvml* nvml) : nvml_(nvml) {}
  std::optional<speed::DeviceSample> sample() const override {
    if (!nvml_) return std::nullopt;
    const auto s = nvml_->sample();
    if (!s) return std::nullopt;
    return speed::DeviceSample{s->sm_clock_mhz, s->throttled(), s->throttled() ? s->describe() : std::string()};
  }
  std::optional<std::vector<speed::DeviceUser>> other_processes() const override {
    if (!nvml_) return std::nullopt;
    const auto others = nvml_->other_processes();
    if (!others) return std::nullopt;
    std::vector<speed::DeviceUser> users;
    for (const auto& p : *others) users.push_back({p.pid, p.used_bytes});
    return users;
  }

 private:
  const cuda::Nvml* nvml_;
};

double median_of(std::vector<double> v) { return speed::median(std::move(v)); }

// The case's speed-of-light floor (OpSignature::min_bytes_*), from the case's shape symbols, its
// dtype's size and the bytes of each op tensor as drawn; no floor when the op declares none.
speed::LightFloor light_floor(const OpSignature& op, const Case& c, const Tensors& inputs, const Tensors& outputs) {
  speed::LightFloor floor;
  if (op.min_bytes_read.empty() && op.min_bytes_written.empty()) return floor;
  package::SymbolValues values(c.dims.begin(), c.dims.end());
  values["dtype_size"] = static_cast<int64_t>(dtype_size(c.dtype));
  const auto add = [&](const std::vector<TensorSpec>& specs, const Tensors& tensors) {
    for (size_t i = 0; i < specs.size() && i < tensors.size(); ++i)
      values["bytes_" + specs[i].name] = tensors[i].numel() * static_cast<int64_t>(tensors[i].element_size());
  };
  add(op.inputs, inputs);
  add(op.outputs, outputs);
  const auto bytes = [&](const std::string& text) {
    return text.empty() ? 0.0 : static_cast<double>(package::Expr::parse(text).evaluate(values));
  };
  floor.read_bytes = bytes(op.min_bytes_read);
  floor.written_bytes = bytes(op.min_bytes_written);
  return floor;
}

}  // namespace

std::vector<double> Runner::time_launches(const KernelInfo& kernel, const Case& c, int count, bool flush_l2) {
  const OpSignature& op = find_op(c.op);
  const OpReference& ref = op_reference(c.op);
  const Attributes attrs = call_attributes(op, c);
  Tensors inputs = case_inputs(ref, c, op, impl_->device);
  const Tensors outputs = arm_outputs(op, c, inputs, impl_->device);
  auto& timer = impl_->launch_timer();
  // Between launches, unmeasured: the outputs' start values (KernelInfo::output_start), the flush.
  const Starts starts = output_starts(op, &kernel);
  const bool refill = std::any_of(starts.begin(), starts.end(), [](const auto& v) { return v.has_value(); });
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
    impl_->lose_context_if_faulted("the CUDA context was lost when '" + kernel.name + "' was launched to record its launches");
    none.known = false;
    none.why = std::string("its launch failed: ") + e.what();
    return none;
  }
}

// One timed comparison with checked timing (Runner::time_case): the candidate against its baseline
// (a kernel, or eager), interleaved by speed::run_interleaved through speed::CheckedArms. Its
// members are the comparison's buffers and check state; its methods are CheckedArms' hooks. The
// reference graph is the runner's (kept across comparisons), lent to it.
class Runner::Impl::CheckedTiming {
 public:
  CheckedTiming(Impl& impl, const KernelInfo& kernel, const KernelInfo* baseline, const Case& c,
                const TimingOptions& options, uint64_t seed, const correctness::RuleConfig* rule, SpeedComparison& cmp)
      : impl(impl), kernel(kernel), baseline(baseline), c(c), options(options), seed(seed), rule(rule), cmp(cmp),
        op(find_op(c.op)), ref(op_reference(c.op)), attrs(call_attributes(op, c)),
        sets(static_cast<size_t>(std::max(1, options.pools))), bank_size(sets + 1),
        on_gpu(impl.backend == Backend::cuda), order(system_random()), reference_graph(impl.reference_graph) {}

  /// Times the comparison into `cmp` (its decision, samples and notes).
  void run() {
    cmp.pools = static_cast<int>(sets);
    if (!set_up_buffers()) return;
    set_up_checks();
    const std::array<bool, 2> checked{checking && arm[0].kernel != nullptr, checking};
    const NvmlMonitor monitor(impl.nvml.get());
    CheckedArms arms(impl.launch_timer(), sets, bank_size, 2 * static_cast<int64_t>(options.interleave.launches_per_arm),
                     checked, hooks(), impl.nvml ? &monitor : nullptr,
                     {arm[0].kernel ? arm[0].kernel->name : std::string("eager"), kernel.name});

    // Warm-up until both arms settle, bounded by a share of the time budget (a 65 ms launch on a
    // busy 2-core host never settled within 2%: 20 batches, 13 s, for a 2 s budget).
    speed::warm_up(arms, options.max_warmup_batches, options.warmup_budget_share * options.interleave.time_budget_s);

    arms.begin_blocks(checking);
    Rng rng(derive_seed(seed, "interleave/" + kernel.name + "/" + c.id(), 0));
    speed::InterleaveResult r;
    try {
      r = speed::run_interleaved(arms, options.interleave, rng);
    } catch (TimingInvalid& invalid) {
      impl.sync();
      record_arms(arms);
      cmp.decision = Outcome::invalid;
      add_note(cmp.note, invalid.reason);
      return;
    } catch (WrongWhileTimed& wrong) {
      impl.sync();
      record_arms(arms);
      wrong_while_timed(wrong);
      return;
    }
    impl.sync();
    record_arms(arms);
    decide(r);
  }

 private:
  /// The kernel arm's buffers, or eager's (kernel nullptr).
  struct ArmBuffers {
    const KernelInfo* kernel = nullptr;
    std::vector<Tensors> inputs, outputs;
  };
  /// What the checked launch of an arm saw and wrote.
  struct Check {
    Tensors inputs_before, outputs_after;
    std::vector<at::Tensor> input_changed;  // right after the launch, per input not written in place
    at::Tensor flags;  // cuda: [0] an output not close, [1 + i] input i changed (non-zero: yes)
    std::vector<int64_t> flag_of_input;  // input_changed[j] is flags[flag_of_input[j]] when >= 0
    at::Tensor bad;    // the first look's ATen verdict, where no flag kernel applied (bool; true: not cleared)
    bool mismatch = false;  // the reference's outputs do not fit the kernel's: not cleared
  };

  // Input contents: a bank of sets + 1 draws of the case's generator (seeds derived from the case's);
  // block b's buffer set s holds bank entry (b + s) % (sets + 1), so every set's contents change
  // under the same pointers from one block to the next, at the cost of one copy per input.
  Case bank_case(size_t entry) const {
    Case d = c;
    d.seed = derive_seed(c.seed, "timed/bank", entry);
    return d;
  }
  size_t bank_entry(int64_t block, size_t set) const { return (static_cast<size_t>(block) + set) % bank_size; }

  // The bank, each arm's buffers, the guard and the speed-of-light floor; false when there is
  // nothing of the kernel to time (cmp says why).
  bool set_up_buffers() {
    for (size_t e = 0; e < bank_size; ++e) bank.push_back(case_inputs(ref, bank_case(e), op, impl.device));
    // Per buffer set, the drawn inputs; each kernel arm has its own outputs (and copies of the
    // inputs it writes in place); the eager arm reads the inputs as drawn. Every set comes from
    // the same generator as the case, so the sets share its layouts and alignment.
    drawn.resize(sets);
    for (size_t s = 0; s < sets; ++s) drawn[s] = case_inputs(ref, bank_case(bank_entry(0, s)), op, impl.device);
    arm[1].kernel = &kernel;
    for (size_t s = 0; s < sets; ++s) {
      arm[1].inputs.push_back(drawn[s]);
      arm[1].outputs.push_back(arm_outputs(op, c, arm[1].inputs[s], impl.device));
    }
    // Outside the candidate's guard the reference runs: nothing of the kernel to time.
    if (const auto why = impl.refusal(kernel, arm[1].inputs[0], arm[1].outputs[0], attrs); !why.empty()) {
      cmp.decision = Outcome::skipped;
      cmp.note = "not timed: the case is outside the guard of '" + kernel.name + "' (" + why +
                 "), where the reference runs instead";
      return false;
    }
    // Outside the baseline's guard the baseline falls back to the reference: time that.
    std::string baseline_note;
    if (baseline) {
      Tensors in = drawn[0];
      const Tensors out = arm_outputs(op, c, in, impl.device);
      if (impl.refusal(*baseline, in, out, attrs).empty()) arm[0].kernel = baseline;
      else baseline_note = "the case is outside the guard of baseline '" + baseline->name + "': timed its fallback (eager)";
    }
    // A kernel baseline runs in the candidate's buffers (outputs, and the input copies it writes in
    // place): the two arms never run at once, and on the same addresses neither gains from where
    // its buffers fell (the L2 partition and DRAM channels an address maps to; an A/A of one kernel
    // in two sets of buffers measured a steady 0.6% apart on the H200). The eager arm reads the
    // drawn inputs and allocates its outputs as eager code does.
    if (arm[0].kernel) {
      arm[0].inputs = arm[1].inputs;
      arm[0].outputs = arm[1].outputs;
    } else {
      arm[0].inputs = drawn;
    }
    cmp.timer = impl.launch_timer().name();
    if (!impl.timer_note.empty()) cmp.note = impl.timer_note;
    light = light_floor(op, c, drawn[0], arm[1].outputs[0]);
    if (light.read_bytes + light.written_bytes > 0) {
      light.ceiling_bytes_per_s = impl.light_ceiling();
      light.l2_bytes = impl.l2_bytes;
      if (!impl.light_note.empty()) add_note(cmp.note, impl.light_note);
    }
    if (!baseline_note.empty()) add_note(cmp.note, baseline_note);
    return true;
  }

  // Checked timing's state: the rule, the poison, the fills, the flags and the copy buffers.
  void set_up_checks() {
    checking = rule != nullptr;
    case_rule = rule ? correctness::scaled_for(*rule, c.dims, c.values == Values::all_equal) : correctness::RuleConfig{};
    poison = derive_seed(impl.poison_salt ^ c.seed, "poison/timed", 0);
    // The fp64 oracle only where the verdict reads it (it is the costliest part of a check).
    needs_oracle = case_rule.kind == correctness::RuleKind::ref_ratio;
    for (const auto& o : op.outputs) {
      const auto kind = output_rule(case_rule, op.tensor_dtype(o, c.dtype), o).kind;
      needs_oracle |= kind == correctness::RuleKind::eager_relative || kind == correctness::RuleKind::conditioned;
    }
    // What a checked launch's outputs hold before it: values a kernel cannot tell from earlier
    // results (random, finite; integers: the poison), drawn once and copied in.
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      const at::Tensor& out = arm[1].outputs[0][i];
      const DType dt = from_scalar_type(out.scalar_type());
      if (is_floating(dt)) fills.push_back(at::randn(out.sizes(), out.options().dtype(at::kFloat)).to(out.scalar_type()));
      else fills.push_back(poison_bits(dt, impl.device, poison).expand({out.numel()}).view(out.sizes()).view(out.scalar_type()));
    }
    // Outputs a kernel arm reads before it writes them hold its start value before every launch
    // (refill), the checked one included.
    for (size_t a = 0; a < 2; ++a) {
      starts[a] = output_starts(op, arm[a].kernel);
      for (size_t i = 0; i < op.outputs.size(); ++i) {
        const at::Tensor& out = arm[1].outputs[0][i];
        start_fills[a].push_back(starts[a][i] ? at::full(out.sizes(), *starts[a][i], out.options()) : at::Tensor());
        refills |= starts[a][i].has_value();
      }
    }
    in_place = written_in_place(op, op.inputs.size());
    flags_per_arm = 1 + static_cast<int64_t>(op.inputs.size());
    if (!on_gpu) return;
    host_flags = impl.flags_on_host(static_cast<size_t>(2 * flags_per_arm));
    std::fill(host_flags, host_flags + 2 * flags_per_arm, 0);
    void* on_device = nullptr;
    KGATE_CUDA_CALL(cudaHostGetDevicePointer(&on_device, host_flags, 0));
    all_flags = at::from_blob(on_device, {2 * flags_per_arm}, at::TensorOptions().dtype(at::kInt).device(impl.device));
    for (int64_t a = 0; a < 2; ++a) arm_flags[static_cast<size_t>(a)] = all_flags.narrow(0, a * flags_per_arm, flags_per_arm);
    std::ostringstream key;
    key << op.name;
    for (const auto& t : arm[1].inputs[0]) key << ' ' << t.scalar_type() << t.sizes();
    for (const auto& [name, value] : attrs) key << ' ' << name << '=' << std::hexfloat << value;
    if (reference_graph.key != key.str()) {
      reference_graph = {};
      reference_graph.key = key.str();
      for (const auto& t : arm[1].inputs[0]) reference_graph.inputs.push_back(at::empty(t.sizes(), t.options()));
    }
    before_buffers = reference_graph.inputs;
    for (const auto& t : arm[1].inputs[0])
      if (arm[0].kernel) before_backup.push_back(at::empty(t.sizes(), t.options()));
    for (size_t a = 0; a < 2; ++a)
      for (const auto& t : arm[1].outputs[0]) after_buffers[a].push_back(at::empty(t.sizes(), t.options()));
  }

  CheckedArms::Hooks hooks() {
    CheckedArms::Hooks h;
    h.launch = [this](int a, size_t s) { launch(a, s); };
    if (options.flush_l2 && impl.flusher) h.flush = [this] { impl.flusher->flush(); };
    h.perturb = [this](int a, size_t s, bool before_flush) { timed_work([&] { swap_two(a, s, before_flush); }); };
    h.prepare = [this](int a, size_t s) { timed_work([&] { prepare(a, s); }); };
    if (refills) h.refill = [this](int a, size_t s) { refill(a, s); };
    h.capture = [this](int a, size_t s) { timed_work([&] { capture(a, s); }); };
    h.block_done = [this](int64_t block, const std::array<int64_t, 2>& checked_set, bool settled) {
      std::optional<WrongWhileTimed> wrong;
      timed_work([&] { wrong = block_done(block, checked_set, settled); });
      if (wrong) throw std::move(*wrong);
    };
    return h;
  }

  // Wall time spent on checked timing's own work (copies, checks, new contents), for the report.
  template <typename Work>
  void timed_work(const Work& work) {
    const auto start = std::chrono::steady_clock::now();
    work();
    check_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  void launch(int a, size_t s) {
    const ArmBuffers& b = arm[static_cast<size_t>(a)];
    if (b.kernel) impl.launch(*b.kernel, b.inputs[s], b.outputs[s], attrs);
    else ref.eager(b.inputs[s], attrs);
  }

  // Before every timed launch two elements of each floating input of its set trade places (the
  // same values in another order, so the case's distribution is kept): no two launches of a block
  // see the same inputs, and a result cached by content (say, by a hash of a sample of the
  // input) goes stale. Integer inputs (indices, offsets) keep their order: it may be a contract.
  // before_flush: the flush kernel that follows does the swap (no launch of its own).
  void swap_two(int a, size_t s, bool before_flush) {
    for (const auto& t : arm[static_cast<size_t>(a)].inputs[s]) {
      if (!t.is_floating_point() || t.numel() < 2) continue;
      std::array<int64_t, 2> offset{0, 0};  // in elements, through the strides
      for (auto& o : offset) {
        int64_t linear = order.uniform_int(0, t.numel() - 1);
        for (int64_t d = t.dim() - 1; d >= 0; --d) {
          o += (linear % t.size(d)) * t.stride(d);
          linear /= t.size(d);
        }
      }
      const int64_t size = static_cast<int64_t>(t.element_size());
      auto* base = static_cast<unsigned char*>(t.data_ptr());
      unsigned char* x = base + offset[0] * size;
      unsigned char* y = base + offset[1] * size;
      if (x == y) continue;
      if (on_gpu && before_flush && impl.flusher) {
        impl.flusher->swap_at_flush(x, y, static_cast<int>(size));
      } else if (on_gpu) {
        KGATE_CUDA_CALL(cuda::launch_swap_elements(x, y, static_cast<int>(size), static_cast<cudaStream_t>(impl.stream())));
      } else {
        for (int64_t i = 0; i < size; ++i) std::swap(x[i], y[i]);
      }
    }
  }

  // The copies checked timing makes between launches: on the GPU, into buffers allocated once per
  // comparison, as copy jobs (copy_job) where both sides are contiguous (raw_copy: an ATen op costs
  // the host several times a kernel launch, and the host's time between launches is the wall time
  // checked timing adds); otherwise by ATen (copy_into).
  bool raw_copy(const at::Tensor& dst, const at::Tensor& src) const {
    return on_gpu && dst.defined() && dst.is_contiguous() && src.is_contiguous() && dst.nbytes() == src.nbytes() &&
           dst.scalar_type() == src.scalar_type();
  }
  static void copy_into(at::Tensor& dst, const at::Tensor& src) {
    if (dst.defined() && dst.sizes() == src.sizes() && dst.scalar_type() == src.scalar_type()) dst.copy_(src);
    else dst = src.clone(at::MemoryFormat::Contiguous);
  }
  // On the GPU the copies and first looks of a checked launch go into one kernel launch each side
  // of it (cuda::launch_check_jobs): the host time between timed launches is the wall time checked
  // timing adds, and each API call costs it more than the copies cost the GPU.
  void copy_job(at::Tensor& dst, const at::Tensor& src) {
    if (!raw_copy(dst, src)) return copy_into(dst, src);
    cuda::CheckJob j;
    j.a = src.data_ptr();
    j.copy_to = dst.data_ptr();
    j.count = static_cast<int64_t>(src.nbytes());
    jobs.push_back(j);
  }
  void launch_jobs() {
    if (!jobs.empty()) KGATE_CUDA_CALL(cuda::launch_check_jobs(jobs, static_cast<cudaStream_t>(impl.stream())));
    jobs.clear();
  }

  // Just before arm a's checked launch on buffer set s: its inputs copied aside, its flags cleared,
  // its outputs filled.
  void prepare(int a, size_t s) {
    ArmBuffers& b = arm[static_cast<size_t>(a)];
    Check& k = check[static_cast<size_t>(a)];
    k = Check{};
    // The other arm's checked launch of this block, not judged yet, moves its inputs aside (one
    // launch of its own: the copies below overwrite what these read).
    Check& other = check[static_cast<size_t>(1 - a)];
    if (on_gpu && !before_buffers.empty() && !other.inputs_before.empty() &&
        other.inputs_before[0].is_same(before_buffers[0])) {
      for (size_t i = 0; i < before_buffers.size(); ++i) copy_job(before_backup.at(i), before_buffers[i]);
      launch_jobs();
      other.inputs_before = before_backup;
    }
    for (size_t i = 0; i < b.inputs[s].size(); ++i) {
      at::Tensor dst = on_gpu ? before_buffers[i] : at::Tensor();
      copy_job(dst, b.inputs[s][i]);
      k.inputs_before.push_back(dst);
    }
    if (on_gpu) {  // no kernel of this arm's last check is running: the host clears its flags
      k.flags = arm_flags[static_cast<size_t>(a)];
      std::fill_n(host_flags + a * flags_per_arm, flags_per_arm, 0);
    }
    // Outputs not written in place start with the fill, so an element left unwritten reads wrong.
    for (size_t i = 0; i < op.outputs.size(); ++i)
      if (op.alias_input(op.outputs[i]) < 0) {
        const at::Tensor& start = start_fills[static_cast<size_t>(a)][i];
        copy_job(b.outputs[s][i], start.defined() ? start : fills[i]);
      }
    launch_jobs();
  }

  // Before every other launch of a kernel arm with start values: its outputs hold them again (one
  // jobs launch on the GPU; kgate's own work, not timed).
  void refill(int a, size_t s) {
    const Tensors& start = start_fills[static_cast<size_t>(a)];
    for (size_t i = 0; i < start.size(); ++i)
      if (start[i].defined()) copy_job(arm[static_cast<size_t>(a)].outputs[s][i], start[i]);
    launch_jobs();
  }

  // On the GPU the first look's reference reads the same buffers at every checked launch of either
  // arm (before_buffers), so it is replayed as a CUDA graph (Impl::ReferenceGraph): one launch
  // instead of the reference's ATen calls (seven for rms_norm, ~0.2 ms of host time).
  Tensors look_reference(const Tensors& inputs) {
    auto& g = reference_graph;
    if (!on_gpu || g.eager_only || g.calls++ == 0) return ref.eager(inputs, attrs);
    bool same = inputs.size() == g.inputs.size();
    for (size_t i = 0; same && i < inputs.size(); ++i) same = inputs[i].is_same(g.inputs[i]);
    if (!same) return ref.eager(inputs, attrs);
    if (!g.graph) {
      g.eager_only = true;  // unless the capture succeeds
      auto graph = std::make_unique<at::cuda::CUDAGraph>();
      Tensors outputs;
      bool captured = false;
      {
        if (!impl.capture_stream) impl.capture_stream = at::cuda::getStreamFromPool();
        at::cuda::CUDAStreamGuard on_side(*impl.capture_stream);
        try {
          graph->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
          captured = true;
          outputs = ref.eager(inputs, attrs);
        } catch (const std::exception&) {
          outputs.clear();
        }
        if (captured) {
          try {
            graph->capture_end();
            g.exec = graph->raw_cuda_graph_exec();
          } catch (const std::exception&) {
            outputs.clear();
          }
        }
        cudaGetLastError();  // a refused capture leaves its error behind
      }
      if (outputs.empty()) return ref.eager(inputs, attrs);
      g.graph = std::move(graph);
      g.outputs = std::move(outputs);
      g.eager_only = false;
    }
    // Launched as is: ATen's replay() also renews the RNG state captured with the graph (ATen
    // calls of their own), which a reference never draws from.
    KGATE_CUDA_CALL(cudaGraphLaunch(g.exec, at::cuda::getCurrentCUDAStream().stream()));
    return g.outputs;
  }

  // A first look, cheap: each output against the eager reference under a tolerance that implies
  // the case's rule (lean_tolerance), the inputs against their copies. Only a launch that this
  // look does not clear is judged under the rule itself (judge_outputs, the oracle included). It
  // is queued right after the checked launch, between timed launches, so the host work runs while
  // the GPU still works through the launches queued before it; on the GPU the comparisons are jobs
  // of one kernel (with the input checks capture queued) raising the arm's flags, read back once
  // at the block's end (cleared). `pending[i]`, when defined: output i, not yet copied out, which
  // its comparison copies on the way (or a copy job, where it has none).
  void first_look(size_t a, std::vector<at::Tensor>& pending) {
    Check& k = check[a];
    const Tensors expected = look_reference(k.inputs_before);
    bool aten_used = false;
    // The ATen verdicts (none on the GPU for contiguous tensors: the flag kernels judge those).
    const auto raise = [&k](const at::Tensor& bad) { k.bad = k.bad.defined() ? k.bad.logical_or(bad) : bad; };
    k.mismatch = expected.size() < k.outputs_after.size();
    for (size_t i = 0; i < k.outputs_after.size() && !k.mismatch; ++i) {
      const at::Tensor& out = k.outputs_after[i];
      const at::Tensor want = expected[i].contiguous();
      if (want.sizes() != out.sizes() || want.scalar_type() != out.scalar_type()) {
        k.mismatch = true;
        break;
      }
      const DType dt = from_scalar_type(out.scalar_type());
      if (on_gpu) {
        cuda::CheckJob j;
        const at::Tensor& source = pending[i].defined() ? pending[i] : out;
        j.a = source.data_ptr();
        j.b = want.data_ptr();
        j.copy_to = pending[i].defined() ? out.data_ptr() : nullptr;
        j.flag = k.flags.data_ptr<int>();
        if (is_floating(dt)) {
          const Tolerance tol = lean_tolerance(output_rule(case_rule, dt, op.outputs[i]), dt);
          j.kind = cuda::CheckJob::Kind::not_close;
          j.count = out.numel();
          j.type = dt == DType::f32    ? cuda::CloseType::f32
                   : dt == DType::f16  ? cuda::CloseType::f16
                   : dt == DType::bf16 ? cuda::CloseType::bf16
                                       : cuda::CloseType::f64;
          j.rtol = tol.rtol;
          j.atol = tol.atol;
        } else {
          j.kind = cuda::CheckJob::Kind::bytes_differ;
          j.count = static_cast<int64_t>(out.nbytes());
        }
        jobs.push_back(j);
        pending[i] = at::Tensor();
        continue;
      }
      if (!is_floating(dt)) {
        raise(out.ne(want).any());
        aten_used = true;
        continue;
      }
      const Tolerance tol = lean_tolerance(output_rule(case_rule, dt, op.outputs[i]), dt);
      raise(at::isclose(out, want, tol.rtol, tol.atol, /*equal_nan=*/true).logical_not().any());
      aten_used = true;
    }
    // Outputs no comparison copied (the reference did not fit them).
    for (size_t i = 0; i < pending.size(); ++i)
      if (pending[i].defined()) copy_job(k.outputs_after[i], pending[i]);
    launch_jobs();  // while `expected` holds the reference's outputs
    // Inputs compared by ATen (not contiguous, or off the GPU) join the verdict; on the GPU the
    // rest already raised their flags.
    for (const auto& changed : k.input_changed)
      if (changed.defined()) {
        raise(changed);
        aten_used = true;
      }
    if (on_gpu && aten_used) k.flags[0].add_(k.bad.to(at::kInt));
  }

  // Whether arm a's first look cleared its checked launch (both arms' flags are read in one go).
  bool cleared(size_t a) const {
    const Check& k = check[a];
    if (k.mismatch) return false;
    if (!on_gpu) return !k.bad.defined() || !k.bad.item<bool>();
    for (int64_t i = 0; i < flags_per_arm; ++i)
      if (flags_read.at(static_cast<size_t>(static_cast<int64_t>(a) * flags_per_arm + i)) != 0) return false;
    return true;
  }

  // Right after arm a's checked launch on buffer set s: its outputs copied out, its inputs compared
  // with their copies, then the first look.
  void capture(int a, size_t s) {
    Check& k = check[static_cast<size_t>(a)];
    const ArmBuffers& b = arm[static_cast<size_t>(a)];
    std::vector<at::Tensor> pending(b.outputs[s].size());  // copied out by the first look's jobs
    for (size_t i = 0; i < b.outputs[s].size(); ++i) {
      at::Tensor dst = on_gpu ? after_buffers[static_cast<size_t>(a)][i] : at::Tensor();
      if (raw_copy(dst, b.outputs[s][i])) pending[i] = b.outputs[s][i];
      else copy_into(dst, b.outputs[s][i]);
      k.outputs_after.push_back(dst);
    }
    // Now, before a later launch's swap changes this set's inputs.
    for (size_t i = 0; i < k.inputs_before.size(); ++i) {
      if (i < in_place.size() && in_place[i]) continue;
      const at::Tensor& now = b.inputs[s][i];
      const at::Tensor& before = k.inputs_before[i];
      if (on_gpu && now.is_contiguous() && before.is_contiguous()) {
        cuda::CheckJob j;
        j.kind = cuda::CheckJob::Kind::bytes_differ;
        j.a = now.data_ptr();
        j.b = before.data_ptr();
        j.count = static_cast<int64_t>(now.nbytes());
        j.flag = k.flags.data_ptr<int>() + 1 + i;
        jobs.push_back(j);  // launched with the first look's
        k.input_changed.emplace_back();  // its flag (a view only if the launch is judged)
        k.flag_of_input.push_back(static_cast<int64_t>(1 + i));
        continue;
      }
      const auto bits = bits_type(from_scalar_type(now.scalar_type()));
      k.input_changed.push_back(now.view(bits).ne(before.view(bits)).any());
      k.flag_of_input.push_back(-1);
    }
    first_look(static_cast<size_t>(a), pending);
  }

  // The block's end: each checked launch the first look did not clear is judged under the rule
  // (a failure is returned), then the next block's contents are copied in.
  std::optional<WrongWhileTimed> block_done(int64_t block, const std::array<int64_t, 2>& checked_set, bool settled) {
    if (on_gpu) {  // the device drained the block's launches: read the flags
      if (!settled) KGATE_CUDA_CALL(cudaStreamSynchronize(static_cast<cudaStream_t>(impl.stream())));
      flags_read.assign(host_flags, host_flags + 2 * flags_per_arm);
    }
    for (size_t a = 0; a < 2; ++a) {
      if (checked_set[a] < 0 || check[a].outputs_after.empty()) continue;
      const size_t set = static_cast<size_t>(checked_set[a]);
      if (!cleared(a)) {
        ++cmp.checks_judged;
        DeviceScalars q;
        MemorySlots memory;
        const Check& k = check[a];
        for (size_t j = 0; j < k.input_changed.size(); ++j)
          memory.inputs_changed.push_back(
              q.add_int(k.flag_of_input[j] >= 0 ? k.flags[k.flag_of_input[j]] : k.input_changed[j]));
        CaseResult r;
        r.kcase = bank_case(bank_entry(block, set));
        judge_outputs(op, ref, r.kcase, case_rule, attrs, check[a].inputs_before, check[a].outputs_after, q, memory,
                      poison, true, starts[a], impl.device, {}, r, needs_oracle);
        if (r.outcome == Outcome::failed) return WrongWhileTimed{static_cast<int>(a), std::move(r)};
      }
      check[a] = Check{};
    }
    // The next block's contents: the same buffers (pointers), the next bank entries (on the GPU
    // one jobs launch, then one more for the arms' own copies of inputs written in place).
    for (size_t s = 0; s < sets; ++s) {
      const Tensors& next = bank[bank_entry(block + 1, s)];
      for (size_t i = 0; i < next.size(); ++i) copy_job(drawn[s][i], next[i]);
    }
    launch_jobs();
    for (size_t s = 0; s < sets; ++s)
      for (size_t a = 0; a < arm.size(); ++a) {
        if (a == 0 && arm[0].kernel) continue;  // the candidate's buffers
        for (size_t i = 0; i < arm[a].inputs[s].size(); ++i)
          if (!arm[a].inputs[s][i].is_same(drawn[s][i])) copy_job(arm[a].inputs[s][i], drawn[s][i]);
      }
    launch_jobs();
    return std::nullopt;
  }

  void record_arms(const CheckedArms& arms) {
    cmp.baseline_kernels = arms.kernels(0);
    cmp.candidate_kernels = arms.kernels(1);
    std::tie(cmp.sm_clock_min_mhz, cmp.sm_clock_max_mhz) = arms.clock_range();
    cmp.checked_launches = arms.checked_launches();
    cmp.check_seconds = check_seconds;
  }

  // A checked timed launch failed: the candidate's is a failure of the comparison, the baseline's
  // makes it invalid.
  void wrong_while_timed(WrongWhileTimed& wrong) {
    // The failing arm's checked launch of the last block (the other arm's may follow it).
    SpeedComparison::CheckedLaunch last;
    for (auto it = cmp.checked_launches.rbegin(); it != cmp.checked_launches.rend(); ++it)
      if (it->arm == wrong.arm) {
        last = *it;
        break;
      }
    const std::string where = "block " + std::to_string(last.block) + ", launch " + std::to_string(last.launch + 1) +
                              " of " + std::to_string(2 * options.interleave.launches_per_arm) + " (buffer set " +
                              std::to_string(static_cast<size_t>(last.launch) % sets) + ")";
    CaseResult& w = wrong.result;
    if (wrong.arm == 1) {
      w.rule = "wrong_while_timed";
      w.message = "wrong while timed: '" + kernel.name + "' passed its checks, but its output in a timed launch (" +
                  where + ", inputs of case " + w.kcase.id() + ") fails: " + w.message;
      w.repro = repro_command(kernel, w.kcase);
      cmp.decision = Outcome::failed;
      add_note(cmp.note, w.message);
      cmp.wrong_while_timed = std::move(w);
    } else {
      cmp.decision = Outcome::invalid;
      add_note(cmp.note, "baseline '" + arm[0].kernel->name + "' was wrong in a timed launch (" + where + "): " + w.message);
    }
  }

  // The samples, the estimate and the decision of a run that finished.
  void decide(const speed::InterleaveResult& r) {
    cmp.blocks = static_cast<int64_t>(r.blocks.size());
    for (const auto& b : r.blocks) {
      if (b.dropped) {
        ++cmp.dropped_blocks;
        continue;
      }
      cmp.baseline_ns.insert(cmp.baseline_ns.end(), b.a.begin(), b.a.end());
      cmp.candidate_ns.insert(cmp.candidate_ns.end(), b.b.begin(), b.b.end());
    }
    cmp.baseline_median_ns = median_of(cmp.baseline_ns);
    cmp.candidate_median_ns = median_of(cmp.candidate_ns);
    cmp.ratio = std::exp(r.decision.hodges_lehmann);
    cmp.ratio_lower = std::exp(r.decision.lower);
    cmp.ratio_upper = std::exp(r.decision.upper);
    cmp.p_value = r.decision.p_regression;
    cmp.p_adjusted = cmp.p_value;
    if (r.budget_needed_s > 0) {
      char text[200];
      std::snprintf(text, sizeof text,
                    "no decision was possible: %zu blocks fit %g x the time budget, and a decision needs %d; "
                    "--time-budget %.0f would allow it",
                    r.blocks.size(), options.interleave.max_budget_factor, options.interleave.min_blocks,
                    std::ceil(r.budget_needed_s));
      add_note(cmp.note, text);
    }
    // Speed of light: each arm's fraction of the copy bandwidth; in cold-cache timing a median
    // below the op's floor is not a speedup but a measurement (or a kernel) to distrust.
    std::optional<std::string> too_fast;
    if (light.read_bytes + light.written_bytes > 0 && light.ceiling_bytes_per_s > 0) {
      cmp.sol_read_bytes = light.read_bytes;
      cmp.sol_written_bytes = light.written_bytes;
      cmp.sol_ceiling_bytes_per_s = light.ceiling_bytes_per_s;
      cmp.sol_candidate_fraction = speed::light_fraction(light, cmp.candidate_median_ns);
      cmp.sol_baseline_fraction = speed::light_fraction(light, cmp.baseline_median_ns);
      cmp.sol_enforced = options.flush_l2;
      if (cmp.sol_enforced) {
        too_fast = speed::faster_than_light(light, cmp.candidate_median_ns, "'" + kernel.name + "'");
        if (!too_fast)
          too_fast = speed::faster_than_light(light, cmp.baseline_median_ns,
                                              "baseline '" + (arm[0].kernel ? arm[0].kernel->name : std::string("eager")) +
                                                  "' (is the op's min_bytes floor too high?)");
      }
    }
    if (too_fast) {
      cmp.decision = Outcome::invalid;
      add_note(cmp.note, *too_fast);
    } else if (r.invalid) {
      cmp.decision = Outcome::invalid;
      add_note(cmp.note, r.invalid_reason);
    } else {
      switch (r.decision.decision) {
        case speed::Decision::pass: cmp.decision = Outcome::passed; break;
        case speed::Decision::regression: cmp.decision = Outcome::regressed; break;
        case speed::Decision::inconclusive: cmp.decision = Outcome::inconclusive; break;
      }
    }
    if (impl.nvml && !impl.nvml->available() && cmp.note.find("NVML") == std::string::npos)
      add_note(cmp.note, impl.nvml->unavailable_reason());
  }

  Impl& impl;
  const KernelInfo& kernel;
  const KernelInfo* baseline;
  const Case& c;
  const TimingOptions& options;
  uint64_t seed;
  const correctness::RuleConfig* rule;
  SpeedComparison& cmp;
  const OpSignature& op;
  const OpReference& ref;
  const Attributes attrs;
  const size_t sets;
  const size_t bank_size;
  const bool on_gpu;
  Rng order;  // the swaps' positions (the system's random source seeds it)
  ReferenceGraph& reference_graph;

  std::vector<Tensors> bank, drawn;
  std::array<ArmBuffers, 2> arm;
  speed::LightFloor light;

  bool checking = false;
  correctness::RuleConfig case_rule;
  uint64_t poison = 0;
  bool needs_oracle = false;
  std::array<Check, 2> check;
  Tensors fills;
  std::array<Starts, 2> starts;         // each arm's outputs' start values (output_starts)
  std::array<Tensors, 2> start_fills;   // the same as tensors (undefined: none)
  bool refills = false;                 // some arm has one
  double check_seconds = 0;
  std::vector<bool> in_place;
  int64_t flags_per_arm = 1;
  at::Tensor all_flags;                 // both arms' flags: one read per block
  std::array<at::Tensor, 2> arm_flags;  // each arm's part of them
  int* host_flags = nullptr;            // the same, as the host sees them (mapped memory)
  // The checked launch's inputs as they were, for the reference and the input checks: one set for
  // both arms, so that one reference graph serves them (backup: the earlier arm's, moved aside when
  // the other arm's checked launch of the same block comes before its verdict).
  Tensors before_buffers, before_backup;
  std::array<Tensors, 2> after_buffers;
  std::vector<cuda::CheckJob> jobs;
  std::vector<int> flags_read;  // both arms' flags at the block's end
};

SpeedComparison Runner::time_case(const KernelInfo& kernel, const KernelInfo* baseline, const Case& c,
                                  const TimingOptions& options, uint64_t seed, const correctness::RuleConfig* rule) {
  SpeedComparison cmp;
  cmp.kcase = c;
  cmp.baseline = baseline ? baseline->name : "eager";
  cmp.delta = options.interleave.delta;
  cmp.alpha = options.interleave.alpha;
  if (impl_->context_lost) {
    cmp.decision = Outcome::skipped;
    cmp.note = "not run: " + impl_->lost_reason;
    return cmp;
  }
  // The same code on both sides (a new package version whose kernels did not change): nothing
  // to time. A kernel given as its own baseline (kgate calibrate's A/A) is timed.
  if (baseline && baseline != &kernel && same_code(kernel, *baseline)) {
    cmp.decision = Outcome::unchanged;
    cmp.note = "not timed: '" + kernel.name + "' and baseline '" + baseline->name +
               "' run byte-identical code (every CUBIN and the manifest but name and version; digest " +
               kernel.code_digest.substr(0, 16) + ")";
    return cmp;
  }
  try {
    Impl::CheckedTiming(*impl_, kernel, baseline, c, options, seed, rule, cmp).run();
  } catch (const Error& e) {
    cmp.decision = Outcome::invalid;
    cmp.note = std::string("timing failed: ") + e.what();
    impl_->lose_context_if_faulted("the CUDA context was lost while timing kernel '" + kernel.name + "'");
  }
  return cmp;
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
    second.message = "two runs on the same input gave bitwise different outputs (a race, or an "
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
                   "result?): " + second.message;
  second.rule = "stale";
  second.kcase = c;  // the pair derives from the first case
  second.repro = repro_command(kernel, c) + "  # then " + next.id();
  return second;
}

CaseResult Runner::check_written_before(const KernelInfo& kernel, const Case& c, const correctness::RuleConfig& rule) {
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
  r.message = "written before: case " + c.id() + " passes into poisoned outputs but fails into outputs that held "
              "earlier values (does the kernel look at its outputs before writing them?): " + r.message;
  r.rule = "written_before";
  return r;
}

}  // namespace kgate
