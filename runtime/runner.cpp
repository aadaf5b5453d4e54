// The runner: its lifetime and public API (runner.hpp) and a case's check (check_case). The judging
// of outputs is in judge_outputs.cpp, checked timing (Runner::time_case) in checked_timing.cpp;
// what they share is in runner_internal.hpp. With references/, the one place that includes torch
// headers.
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
#include "runtime/cuda/timer.hpp"
#include "runtime/torch_op.hpp"

#include "core/cost.hpp"
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
int64_t poison_pattern(DType dtype, uint64_t salt) {
  const uint64_t r = salt * 0x9E3779B97F4A7C15ULL ^ (salt >> 29);
  const auto payload = [&](int bits) {  // in [1, 2^bits - 2]
    const uint64_t span = (uint64_t{1} << bits) - 2;
    return 1 + (r >> 8) % span;
  };
  const uint64_t sign = r & 1;
  switch (dtype) {
    case DType::f16:
      return static_cast<int16_t>(static_cast<uint16_t>(sign << 15 | 0x7E00 | payload(9)));
    case DType::bf16:
      return static_cast<int16_t>(static_cast<uint16_t>(sign << 15 | 0x7FC0 | payload(6)));
    case DType::f32:
      return static_cast<int32_t>(static_cast<uint32_t>(sign << 31 | 0x7FC00000u | payload(22)));
    case DType::f64:
      return static_cast<int64_t>(sign << 63 | 0x7FF8000000000000ULL | payload(51));
    // Integers have no NaN: a value far outside any index or count range an op produces.
    case DType::i32:
      return static_cast<int32_t>(0x7FADBEEF);
    case DType::i64:
      return static_cast<int64_t>(0x7FFFDEADBEEF0001LL);
    // One-byte dtypes: every pattern but bool's 0xA5 is a value a kernel may write (fp8's 0x7F is
    // its NaN, int8's -128 lies outside symmetric quantization's range), so an element holding the
    // poison counts as unwritten only where the reference holds something else (unwritten_mask).
    case DType::i8:
      return static_cast<int8_t>(-128);
    case DType::u8:
    case DType::b8:
      return static_cast<int8_t>(static_cast<uint8_t>(0xA5));
    case DType::f8e4m3:
      return static_cast<int8_t>(0x7F);
  }
  throw Error(ErrorKind::internal, "no poison pattern for this dtype");
}

at::Tensor poison_bits(DType dtype, at::Device device, uint64_t salt) {
  return at::full({1}, poison_pattern(dtype, salt),
                  at::TensorOptions().dtype(bits_type(dtype)).device(device));
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
  g.output.view(bits_type(dtype)).fill_(poison_pattern(dtype, salt));
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

// 1 when a byte of either guard band differs from the canary (the ATen chain's memory check).
at::Tensor guard_bands_changed(const GuardedOutput& g) {
  const int64_t elem = static_cast<int64_t>(g.buffer.element_size());
  auto bytes = g.buffer.view(at::kByte);
  auto head = bytes.narrow(0, 0, g.guard_elements * elem);
  auto tail = bytes.narrow(0, (g.guard_elements + g.numel) * elem, g.guard_elements * elem);
  return head.ne(kGuardByte).any().logical_or(tail.ne(kGuardByte).any());
}

// Byte ranges compared after a launch: an input against its snapshot, a guard band against the
// canary.
struct BytesPair {
  const void* a = nullptr;
  const void* b = nullptr;
  int64_t bytes = 0;
};

// Queues on `q`, per pair, 1 when some byte of `a` differs from `b` (else 0); returns the slots.
// One jobs launch on a GPU (cuda::launch_check_jobs, the flags read with the case's scalars),
// memcmp on the cpu backend: where each comparison was a chain of ATen operators.
std::vector<size_t> queue_bytes_differ(const std::vector<BytesPair>& pairs, at::Device device,
                                       DeviceScalars& q) {
  if (pairs.empty()) return {};
  const auto n = static_cast<int64_t>(pairs.size());
  at::Tensor flags;
  if (device.is_cuda()) {
    flags = at::zeros({n}, at::TensorOptions().dtype(at::kInt).device(device));
    std::vector<cuda::CheckJob> jobs;
    for (size_t k = 0; k < pairs.size(); ++k) {
      cuda::CheckJob j;
      j.kind = cuda::CheckJob::Kind::bytes_differ;
      j.a = pairs[k].a;
      j.b = pairs[k].b;
      j.count = pairs[k].bytes;
      j.flag = flags.data_ptr<int>() + k;
      jobs.push_back(j);
    }
    KGATE_CUDA_CALL(cuda::launch_check_jobs(jobs, at::cuda::getCurrentCUDAStream().stream()));
    flags = flags.to(at::kLong);
  } else {
    flags = at::empty({n}, at::kLong);
    auto* f = flags.data_ptr<int64_t>();
    for (size_t k = 0; k < pairs.size(); ++k)
      f[k] = pairs[k].bytes > 0 &&
             std::memcmp(pairs[k].a, pairs[k].b, static_cast<size_t>(pairs[k].bytes)) != 0;
  }
  const size_t first = q.add_words(flags);
  std::vector<size_t> slots;
  for (size_t k = 0; k < pairs.size(); ++k) slots.push_back(first + k);
  return slots;
}

// Bitwise snapshot of an input (NaN-safe comparison later).
at::Tensor bits_snapshot(const at::Tensor& t) {
  return t.contiguous().view(bits_type(from_scalar_type(t.scalar_type()))).clone();
}

}  // namespace runner_internal

using namespace runner_internal;

void check_runner_environment() { judge_engine(); }

Runner::Runner(Backend backend) : impl_(std::make_unique<Impl>()) {
  impl_->poison_salt = system_random();
  impl_->backend = backend;
  check_runner_environment();  // a KGATE_JUDGE it cannot use: said before any case
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

void Runner::set_siblings(std::function<std::vector<int>()> siblings) {
  impl_->siblings = std::move(siblings);
}

void Runner::release_cached_memory() {
  if (impl_->backend == Backend::cuda && !impl_->context_lost)
    c10::cuda::CUDACachingAllocator::emptyCache();
}

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

// Whether an exception's message names an error of CUDA (ATen's "CUDA error: ...", a cudaError or
// CUresult name, kgate's own CUDA call checks): a launch that failed, not an input refused.
bool names_a_cuda_error(const std::string& what) {
  for (const char* marker : {"CUDA error", "cudaError", "CUDA_ERROR_", "CUDA driver error",
                             "CUDA kernel errors", "device-side assert"})
    if (what.find(marker) != std::string::npos) return true;
  return false;
}

// An error message's first line (ATen appends advice and a backtrace).
std::string first_line(const std::string& what) { return what.substr(0, what.find('\n')); }

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
  // Values are drawn straight into a float dtype; into any other, in float64 first.
  if (!values_drawn_directly(c.dtype)) need += largest_input * 8;
  for (const auto& t : op.outputs) {
    const double n = elements(t),
                 size = static_cast<double>(dtype_size(op.tensor_dtype(t, c.dtype)));
    need += n * (2 * size + 1) +
            (sliced ? 0 : n * (size + 8 * 12));  // the comparisons' float64 temporaries
  }
  need = need * 1.25 + 2 * kGiB;
  size_t free = 0, total = 0;
  const auto read_free = [&] {
    if (cudaMemGetInfo(&free, &total) == cudaSuccess) return true;
    cudaGetLastError();
    return false;
  };
  const char* unread = "skipped: the device's free memory could not be read for a huge case";
  if (!read_free()) return unread;
  // What the caching allocator holds unused is free to the case too (it gives its cached blocks
  // back and retries before an allocation fails), without emptying the cache first: a cudaFree of
  // every cached block, and their cudaMallocs again for the cases after.
  int device = 0;
  KGATE_CUDA_CALL(cudaGetDevice(&device));
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device);
  const auto all = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  const int64_t cached_unused =
      stats.reserved_bytes[all].current - stats.allocated_bytes[all].current;
  if (static_cast<double>(free) + static_cast<double>(std::max<int64_t>(0, cached_unused)) >= need)
    return "";
  c10::cuda::CUDACachingAllocator::emptyCache();  // the cache's fragments, counted whole above
  if (!read_free()) return unread;
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
  // A name the shell would read otherwise (a torch op's "[conj=true]") is quoted.
  const bool plain = kernel.find_first_not_of(
                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                         "0123456789_.-:") == std::string::npos;
  return "kgate replay --kernel " + (plain ? kernel : "'" + kernel + "'") + " '" + c.id() + "'";
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
    result.rule = Reason::not_run;
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
      result.rule = Reason::huge;
      result.message = why;
      return result;
    }
  }
  const Starts starts = output_starts(op, &kernel);
  bool kernel_done = false;  // launched, and finished without a fault
  try {
    std::optional<cost::Scope> generating(std::in_place, "generate");
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
    generating.reset();
    std::string refusal;
    try {
      const cost::Scope launching("kernel");
      refusal = impl_->refusal(kernel, inputs, outputs, attrs);
      result.fallback = impl_->launch(kernel, inputs, outputs, attrs);
      // The whole device, not the stream alone: the kernel's work on any stream is done, and its
      // asynchronous faults surface here, as its own, before any reference runs.
      if (impl_->backend == Backend::cuda) KGATE_CUDA_CALL(cudaDeviceSynchronize());
      impl_->sync();
    } catch (const ReferenceError& e) {
      // The fallback's reference failed: the op's problem, never the kernel's.
      result.outcome = Outcome::invalid;
      result.rule = Reason::reference_error;
      result.fallback = true;
      result.message = std::string("reference error (the op's, not the kernel's): ") + e.what();
      return result;
    } catch (const std::exception& e) {
      // A device fault (illegal address, trap) leaves the context unusable: say so for the rest.
      // Whatever call noticed it (kgate's synchronize, or an ATen call in the kernel's own host
      // code, as a torch custom op makes: c10::Error), the fault is this case's.
      const std::string what = e.what();
      const cudaError_t rc = impl_->lose_context_if_faulted(
          "the CUDA context was lost after kernel '" + kernel.name + "' faulted on case " + c.id());
      result.outcome = Outcome::failed;
      if (rc == cudaSuccess && !names_a_cuda_error(what)) {
        // The kernel's host code threw and the device is sound: it refused the input (a
        // TORCH_CHECK, a dispatch's unsupported dtype), which is not a fault of the GPU.
        result.rule = Reason::refused;
        result.message = "kernel '" + kernel.name + "' (" + kernel.source +
                         ") refused the case: " + first_line(what) +
                         " (an error its host code raised; the device did nothing wrong)";
        return result;
      }
      result.rule = Reason::fault;
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
    std::vector<size_t> inputs_changed, guards_broken;
    if (judge_engine() == JudgeEngine::fused) {
      // The judge's own pass: every comparison in one jobs launch (or memcmp).
      std::vector<BytesPair> inputs_now, guard_bands;
      std::vector<at::Tensor> contiguous;  // an input's bytes in a row, where it is a strided view
      for (size_t i = 0; i < inputs.size(); ++i)
        if (!in_place[i]) {
          contiguous.push_back(inputs[i].contiguous());
          inputs_now.push_back({contiguous.back().const_data_ptr(), snapshots[i].const_data_ptr(),
                                static_cast<int64_t>(snapshots[i].nbytes())});
        }
      const void* canary = impl_->guard_canary(kGuardBytes, kGuardByte);
      for (const auto& go : guarded) {
        const int64_t band = go.guard_elements * static_cast<int64_t>(go.buffer.element_size());
        const auto* bytes = static_cast<const uint8_t*>(go.buffer.const_data_ptr());
        guard_bands.push_back({bytes, canary, band});
        guard_bands.push_back({bytes + band + go.numel * go.buffer.element_size(), canary, band});
      }
      inputs_changed = queue_bytes_differ(inputs_now, impl_->device, q);
      guards_broken = queue_bytes_differ(guard_bands, impl_->device, q);
    } else {
      for (size_t i = 0; i < inputs.size(); ++i)
        if (!in_place[i])
          inputs_changed.push_back(q.add_int(bits_snapshot(inputs[i]).ne(snapshots[i]).any()));
      for (const auto& go : guarded) guards_broken.push_back(q.add_int(guard_bands_changed(go)));
    }
    snapshots.clear();
    std::vector<std::optional<size_t>> whole_unwritten(outputs.size());
    if (huge) {
      if (const std::string s = props::slice_symbol(op); !s.empty())
        judge_slices(op, c, s, outputs, ref_inputs, whole_unwritten, q, impl_->device,
                     derive_seed(impl_->poison_salt ^ c.seed, "poison", 0), impl_->prefill_outputs,
                     starts);
    }

    MemorySlots memory{std::move(inputs_changed), std::move(guards_broken),
                       std::move(whole_unwritten)};
    const std::optional<uint64_t> poison = derive_seed(impl_->poison_salt ^ c.seed, "poison", 0);
    const cost::Scope judging("judge");
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
      if (result.outcome == Outcome::passed) result.rule = Reason::fallback;
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
        result.rule = Reason::reference_error;
        result.message =
            "reference error (the op's, not the kernel's): the reference faulted on the GPU after "
            "kernel '" +
            kernel.name + "' finished: " + what + "; the CUDA context is lost";
      } else {
        result.outcome = Outcome::failed;
        result.rule = Reason::fault;
        result.message = "kernel '" + kernel.name + "' (" + kernel.source +
                         ") faulted on the GPU: " + what + "; the CUDA context is lost";
      }
      return result;
    }
    result.outcome = Outcome::failed;
    result.rule = Reason::error;
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
    second.rule = Reason::determinism;
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
  if (second.outcome != Outcome::failed || second.rule == Reason::fault) return second;
  second.message = "stale output: case " + c.id() + " passed, then case " + next.id() +
                   " (same shape, other values) failed right after it (a cached or stale "
                   "result?): " +
                   second.message;
  second.rule = Reason::stale;
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
  if (r.outcome != Outcome::failed || r.rule == Reason::fault) return r;
  r.message = "written before: case " + c.id() +
              " passes into poisoned outputs but fails into outputs that held "
              "earlier values (does the kernel look at its outputs before writing them?): " +
              r.message;
  r.rule = Reason::written_before;
  return r;
}

}  // namespace kgate
