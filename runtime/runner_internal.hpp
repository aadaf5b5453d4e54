// What runner.cpp and checked_timing.cpp share, inside kgate's runner only: the runner's state
// (Runner::Impl), the output helpers both use, the device-side scalar queue and the judging of a
// case's outputs. Not installed; it includes torch headers.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "gates/speed/speed_of_light.hpp"
#include "references/catalogue.hpp"
#include "references/op_reference.hpp"
#include "runtime/cuda/check.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/cuda/timer.hpp"
#include "runtime/runner.hpp"

namespace kgate {
namespace runner_internal {

using speed::system_random;

/// Per input of `op`, whether an output is written into it in place (an output's alias).
std::vector<bool> written_in_place(const OpSignature& op, size_t inputs);
/// The poison pattern of `dtype` drawn from `salt`: its bits as the signed integer of the dtype's
/// size, widened; and as one element of that integer type on `device`.
int64_t poison_pattern(DType dtype, uint64_t salt);
at::Tensor poison_bits(DType dtype, at::Device device, uint64_t salt);
/// The integer type of `dtype`'s size, to view its bits.
at::ScalarType bits_type(DType dtype);
TensorView view_of(const at::Tensor& t);
/// The outputs of one timed kernel arm (runner.cpp says how outputs written in place are kept
/// apart).
Tensors arm_outputs(const OpSignature& op, const Case& c, Tensors& arm_inputs, at::Device device);
/// Each output's start value (KernelInfo::output_start) in the op's order.
using Starts = std::vector<std::optional<double>>;
Starts output_starts(const OpSignature& op, const KernelInfo* kernel);
/// The rule an output is judged under (integer outputs: exact).
correctness::RuleConfig output_rule(const correctness::RuleConfig& rule, DType dtype,
                                    const TensorSpec& spec);

// Scalars computed on the device and read back in one transfer: each .item() is a device
// synchronization, and a case used to make some thirty of them (most of its time for small cases).
class DeviceScalars {
 public:
  /// Queues a 0-d (or one-element) tensor; returns its slot.
  size_t add_double(const at::Tensor& t) {
    f64_.push_back(t.reshape({}).to(at::kDouble));
    return f64_.size() - 1;
  }
  size_t add_int(const at::Tensor& t) { return add_words(t.reshape({1}).to(at::kLong)); }
  /// Queues a 1-d int64 tensor of n words; returns the slot of the first (the others follow).
  size_t add_words(const at::Tensor& words) {
    i64_.push_back(words);
    const size_t first = words_;
    words_ += static_cast<size_t>(words.numel());
    return first;
  }
  /// Reads every queued scalar back (one synchronization).
  void fetch() {
    std::vector<at::Tensor> all;
    if (!f64_.empty()) all.push_back(at::stack(f64_).view(at::kLong));  // bit-cast: one transfer
    all.insert(all.end(), i64_.begin(), i64_.end());
    if (all.empty()) return;
    const auto host = all.size() == 1 ? all.front().to(at::kCPU) : at::cat(all).to(at::kCPU);
    const int64_t* v = host.data_ptr<int64_t>();
    doubles_.resize(f64_.size());
    std::memcpy(doubles_.data(), v, f64_.size() * sizeof(double));
    ints_.assign(v + f64_.size(), v + f64_.size() + words_);
  }
  double d(size_t slot) const { return doubles_.at(slot); }
  int64_t i(size_t slot) const { return ints_.at(slot); }
  /// `count` words from `slot` (add_words), copied into `to`.
  void words(size_t slot, size_t count, void* to) const {
    if (slot + count > ints_.size()) throw std::out_of_range("DeviceScalars::words");
    std::memcpy(to, ints_.data() + slot, count * sizeof(int64_t));
  }

 private:
  std::vector<at::Tensor> f64_, i64_;
  size_t words_ = 0;
  std::vector<double> doubles_;
  std::vector<int64_t> ints_;
};

/// How judge_outputs measures: one pass of its own over each output (runtime/cuda/judge_stats.hpp),
/// or the chain of ATen operators it restates (the reference the pass is tested against).
enum class JudgeEngine { fused, aten };
/// The engine of this process: KGATE_JUDGE=fused|aten where set, else fused (on the CPU and on a
/// GPU alike; set_judge_engine overrides both).
JudgeEngine judge_engine();
void set_judge_engine(std::optional<JudgeEngine> engine);

// What a caller queued on `q` about memory before judging: per input not written in place, 1 if
// it changed; per guard band of a guarded output (two each), 1 if a byte of it changed; per output,
// the unwritten elements counted already (a huge case's slices).
struct MemorySlots {
  std::vector<size_t> inputs_changed, guards_broken;
  std::vector<std::optional<size_t>> unwritten;
};

/// Runs a reference on `in`, again on contiguous copies where it fails on views (runner.cpp);
/// `copies_first`: on copies from the start.
Tensors run_reference_on_copies_if_it_fails(const std::function<Tensors(const Tensors&)>& run,
                                            const Tensors& in, bool cuda, std::string& note,
                                            bool copies_first = false);

/// Judges a kernel's `outputs` against the eager reference and the fp64 oracle under `rule` and
/// fills `result`'s verdict (runner.cpp says what each argument is). False when the op's reference
/// failed: `result` is then invalid (rule reference_error), never the kernel's failure.
bool judge_outputs(const OpSignature& op, const OpReference& ref, const Case& c,
                   const correctness::RuleConfig& rule, const Attributes& attrs,
                   const Tensors& ref_inputs, const Tensors& outputs, DeviceScalars& q,
                   const MemorySlots& memory, std::optional<uint64_t> poison,
                   bool floating_prefilled, const Starts& starts, at::Device device,
                   const std::vector<double>& sweep_rtols, CaseResult& result,
                   bool with_oracle = true, bool references_on_copies = false);

/// The cpu backend's launch timer.
class ChronoTimer final : public cuda::LaunchTimer {
 public:
  std::vector<double> time(const std::function<void()>& launch, int count,
                           const std::function<void()>& between) override {
    std::vector<double> ns;
    for (int i = 0; i < count; ++i) {
      if (between) between();
      const auto t0 = std::chrono::steady_clock::now();
      launch();
      ns.push_back(
          std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
    }
    return ns;
  }
  const char* name() const override { return "chrono"; }
};

}  // namespace runner_internal

struct Runner::Impl {
  Backend backend;
  at::Device device{at::kCPU};
  bool context_lost = false;
  std::string lost_reason;
  bool references_on_copies = false;           // Runner::set_references_on_copies
  std::function<std::vector<int>()> siblings;  // Runner::set_siblings
  at::Tensor canary;                           // guard_canary's, on a GPU

  /// `bytes` bytes of `value` on the device, to compare a guard band with (made once).
  const void* guard_canary(int64_t bytes, uint8_t value) {
    if (!canary.defined() || canary.numel() < bytes)
      canary = at::full({bytes}, value, at::TensorOptions().dtype(at::kByte).device(device));
    return canary.const_data_ptr();
  }

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
      KGATE_CUDA_CALL(cudaHostAlloc(reinterpret_cast<void**>(&mapped_flags), count * sizeof(int),
                                    cudaHostAllocMapped));
      mapped_count = count;
    }
    return mapped_flags;
  }

  void* stream() const {
    return backend == Backend::cuda ? static_cast<void*>(at::cuda::getCurrentCUDAStream().stream())
                                    : nullptr;
  }

  void sync() {
    if (backend != Backend::cuda) return;
    KGATE_CUDA_CALL(cudaGetLastError());
    KGATE_CUDA_CALL(cudaStreamSynchronize(static_cast<cudaStream_t>(stream())));
  }

  KernelCall make_call(const Tensors& inputs, const Tensors& outputs,
                       const Attributes& attrs) const {
    KernelCall call;
    for (const auto& t : inputs) call.inputs.push_back(runner_internal::view_of(t));
    for (const auto& t : outputs) call.outputs.push_back(runner_internal::view_of(t));
    call.attributes = attrs;
    call.stream = stream();
    return call;
  }

  /// Launches `kernel`, or, for a call outside its guard (KernelInfo::accepts says no), runs the
  /// op's eager reference into the outputs as deployed code falls back. Returns true on fallback.
  bool launch(const KernelInfo& kernel, const Tensors& inputs, const Tensors& outputs,
              const Attributes& attrs) {
    const KernelCall call = make_call(inputs, outputs, attrs);
    if (kernel.accepts && !kernel.accepts(call)) {
      const Tensors expected = fallback_reference(kernel, inputs, attrs);
      const OpSignature& op = find_op(kernel.op);
      for (size_t i = 0; i < outputs.size(); ++i) {
        const std::string name = i < op.outputs.size() ? op.outputs[i].name : std::to_string(i);
        if (i >= expected.size())
          throw ReferenceError("op '" + op.name + "' (" + op.origin +
                               "): the reference returned no output '" + name + "'");
        // The op's shape, not the reference's: a reference of another shape is the op file's error.
        if (expected[i].sizes() != outputs[i].sizes())
          throw ReferenceError("op '" + op.name + "' (" + op.origin + "): output '" + name +
                               "' of the reference has shape " + c10::str(expected[i].sizes()) +
                               ", the op declares " + c10::str(outputs[i].sizes()) +
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
  Tensors fallback_reference(const KernelInfo& kernel, const Tensors& inputs,
                             const Attributes& attrs) {
    fallback_note.clear();
    const OpReference& ref = op_reference(kernel.op);
    auto faulted = [&](const std::string& what) {
      if (lose_context_if_faulted("the CUDA context was lost when the reference of op '" +
                                  kernel.op + "' faulted") != cudaSuccess) {
        throw ReferenceError("the eager reference of op '" + kernel.op +
                             "' (the fallback outside the guard of '" + kernel.name +
                             "') faulted on the GPU: " + cuda::api_error_summary(what) +
                             "; the CUDA context is lost");
      }
    };
    try {
      Tensors out = runner_internal::run_reference_on_copies_if_it_fails(
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
      throw ReferenceError("the eager reference of op '" + kernel.op +
                           "' (the fallback outside the guard of '" + kernel.name +
                           "') failed: " + e.what());
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
        timer = std::make_unique<runner_internal::ChronoTimer>();
      }
    }
    return *timer;
  }
};

}  // namespace kgate
