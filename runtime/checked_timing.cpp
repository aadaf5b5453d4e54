// Checked timing: one timed comparison (Runner::time_case), the candidate against its baseline
// interleaved by speed::run_interleaved through speed::CheckedArms, each timed launch's outputs
// checked on the device. The runner lends it its reference graph, flags and timer
// (runner_internal.hpp).
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
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>

#include "core/cost.hpp"
#include "core/error.hpp"
#include "core/expr.hpp"
#include "core/format.hpp"
#include "core/rng.hpp"
#include "core/safe_text.hpp"
#include "gates/speed/gate.hpp"
#include "gates/speed/speed_of_light.hpp"
#include "references/catalogue.hpp"
#include "references/op_reference.hpp"
#include "runtime/cuda/check.hpp"
#include "runtime/cuda/compare.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/cuda/timer.hpp"
#include "runtime/runner_internal.hpp"

namespace kgate {

using namespace runner_internal;

namespace cuda {
cudaError_t launch_swap_elements(void* a, void* b, int size, cudaStream_t stream);  // l2_flush.cu
}  // namespace cuda

namespace {

// Appends `text` to a comparison's note, "; " between the parts.
void add_note(std::string& note, const std::string& text) {
  note += (note.empty() ? "" : "; ") + text;
}

using speed::CheckedArms;
using speed::TimingInvalid;
using speed::WrongWhileTimed;

// NVML as checked timing's device monitor.
class NvmlMonitor final : public speed::DeviceMonitor {
 public:
  NvmlMonitor(const cuda::Nvml* nvml, std::function<std::vector<int>()> siblings)
      : nvml_(nvml), siblings_(std::move(siblings)) {}
  std::optional<speed::DeviceSample> sample() const override {
    if (!nvml_) return std::nullopt;
    const auto s = nvml_->sample();
    if (!s) return std::nullopt;
    return speed::DeviceSample{s->sm_clock_mhz, s->throttled(),
                               s->throttled() ? s->describe() : std::string()};
  }
  std::optional<std::vector<speed::DeviceUser>> other_processes() const override {
    if (!nvml_) return std::nullopt;
    const auto others = nvml_->other_processes(siblings_ ? siblings_() : std::vector<int>{});
    if (!others) return std::nullopt;
    std::vector<speed::DeviceUser> users;
    for (const auto& p : *others) users.push_back({p.pid, p.used_bytes});
    return users;
  }

 private:
  const cuda::Nvml* nvml_;
  std::function<std::vector<int>()> siblings_;
};

// The case's speed-of-light floor (OpSignature::min_bytes_*), from the case's shape symbols, its
// dtype's size and the bytes of each op tensor as drawn; no floor when the op declares none.
speed::LightFloor light_floor(const OpSignature& op, const Case& c, const Tensors& inputs,
                              const Tensors& outputs) {
  speed::LightFloor floor;
  if (op.min_bytes_read.empty() && op.min_bytes_written.empty()) return floor;
  package::SymbolValues values(c.dims.begin(), c.dims.end());
  values["dtype_size"] = static_cast<int64_t>(dtype_size(c.dtype));
  const auto add = [&](const std::vector<TensorSpec>& specs, const Tensors& tensors) {
    for (size_t i = 0; i < specs.size() && i < tensors.size(); ++i)
      values["bytes_" + specs[i].name] =
          tensors[i].numel() * static_cast<int64_t>(tensors[i].element_size());
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

// One timed comparison with checked timing (Runner::time_case): the candidate against its baseline
// (a kernel, or eager), interleaved by speed::run_interleaved through speed::CheckedArms. Its
// members are the comparison's buffers and check state; its methods are CheckedArms' hooks. The
// reference graph is the runner's (kept across comparisons), lent to it.
class Runner::Impl::CheckedTiming {
 public:
  CheckedTiming(Impl& impl, const KernelInfo& kernel, const KernelInfo* baseline, const Case& c,
                const TimingOptions& options, uint64_t seed, const correctness::RuleConfig* rule,
                SpeedComparison& cmp)
      : impl(impl),
        kernel(kernel),
        baseline(baseline),
        c(c),
        options(options),
        seed(seed),
        rule(rule),
        cmp(cmp),
        op(find_op(c.op)),
        ref(op_reference(c.op)),
        attrs(call_attributes(op, c)),
        sets(static_cast<size_t>(std::max(1, options.pools))),
        bank_size(sets + 1),
        on_gpu(impl.backend == Backend::cuda),
        order(system_random()),
        reference_graph(impl.reference_graph) {}

  /// Times the comparison into `cmp` (its decision, samples and notes).
  void run() {
    cmp.pools = static_cast<int>(sets);
    if (!set_up_buffers()) return;
    set_up_checks();
    const std::array<bool, 2> checked{checking && arm[0].kernel != nullptr, checking};
    const NvmlMonitor monitor(impl.nvml.get(), impl.siblings);
    CheckedArms arms(impl.launch_timer(), sets, bank_size,
                     2 * static_cast<int64_t>(options.interleave.launches_per_arm), checked,
                     hooks(), impl.nvml ? &monitor : nullptr,
                     {arm[0].kernel ? arm[0].kernel->name : std::string("eager"), kernel.name});

    // Warm-up until both arms settle, bounded by a share of the time budget (a 65 ms launch on a
    // busy 2-core host never settled within 2%: 20 batches, 13 s, for a 2 s budget).
    {
      const cost::Scope warming("warmup");
      speed::warm_up(arms, options.max_warmup_batches,
                     options.warmup_budget_share * options.interleave.time_budget_s);
    }

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
    std::vector<at::Tensor>
        input_changed;  // right after the launch, per input not written in place
    at::Tensor flags;   // cuda: [0] an output not close, [1 + i] input i changed (non-zero: yes)
    std::vector<int64_t> flag_of_input;  // input_changed[j] is flags[flag_of_input[j]] when >= 0
    at::Tensor bad;  // the first look's ATen verdict, where no flag kernel applied (bool; true: not
                     // cleared)
    bool mismatch = false;  // the reference's outputs do not fit the kernel's: not cleared
  };

  // Input contents: a bank of sets + 1 draws of the case's generator (seeds derived from the
  // case's); block b's buffer set s holds bank entry (b + s) % (sets + 1), so every set's contents
  // change under the same pointers from one block to the next, at the cost of one copy per input.
  Case bank_case(size_t entry) const {
    Case d = c;
    d.seed = derive_seed(c.seed, "timed/bank", entry);
    return d;
  }
  size_t bank_entry(int64_t block, size_t set) const {
    return (static_cast<size_t>(block) + set) % bank_size;
  }

  // The bank, each arm's buffers, the guard and the speed-of-light floor; false when there is
  // nothing of the kernel to time (cmp says why).
  bool set_up_buffers() {
    for (size_t e = 0; e < bank_size; ++e)
      bank.push_back(case_inputs(ref, bank_case(e), op, impl.device));
    // Per buffer set, the drawn inputs; each kernel arm has its own outputs (and copies of the
    // inputs it writes in place); the eager arm reads the inputs as drawn. Every set comes from
    // the same generator as the case, so the sets share its layouts and alignment.
    drawn.resize(sets);
    for (size_t s = 0; s < sets; ++s)
      drawn[s] = case_inputs(ref, bank_case(bank_entry(0, s)), op, impl.device);
    arm[1].kernel = &kernel;
    for (size_t s = 0; s < sets; ++s) {
      arm[1].inputs.push_back(drawn[s]);
      arm[1].outputs.push_back(arm_outputs(op, c, arm[1].inputs[s], impl.device));
    }
    // Outside the candidate's guard the reference runs: nothing of the kernel to time.
    if (const auto why = impl.refusal(kernel, arm[1].inputs[0], arm[1].outputs[0], attrs);
        !why.empty()) {
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
      else
        baseline_note = "the case is outside the guard of baseline '" + baseline->name +
                        "': timed its fallback (eager)";
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
    case_rule = rule ? correctness::scaled_for(*rule, c.dims, c.values == Values::all_equal)
                     : correctness::RuleConfig{};
    poison = derive_seed(impl.poison_salt ^ c.seed, "poison/timed", 0);
    // The fp64 oracle only where the verdict reads it (it is the costliest part of a check).
    // (Integer outputs are judged exactly or as indices: neither reads it.)
    needs_oracle = false;
    for (const auto& o : op.outputs)
      needs_oracle |=
          correctness::rule_needs(output_rule(case_rule, op.tensor_dtype(o, c.dtype), o).kind,
                                  correctness::Reduction::oracle);
    // What a checked launch's outputs hold before it: values a kernel cannot tell from earlier
    // results (random, finite; integers: the poison), drawn once and copied in.
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      const at::Tensor& out = arm[1].outputs[0][i];
      const DType dt = from_scalar_type(out.scalar_type());
      if (is_floating(dt))
        fills.push_back(
            at::randn(out.sizes(), out.options().dtype(at::kFloat)).to(out.scalar_type()));
      else
        fills.push_back(poison_bits(dt, impl.device, poison)
                            .expand({out.numel()})
                            .view(out.sizes())
                            .view(out.scalar_type()));
    }
    // Outputs a kernel arm reads before it writes them hold its start value before every launch
    // (refill), the checked one included.
    for (size_t a = 0; a < 2; ++a) {
      starts[a] = output_starts(op, arm[a].kernel);
      for (size_t i = 0; i < op.outputs.size(); ++i) {
        const at::Tensor& out = arm[1].outputs[0][i];
        start_fills[a].push_back(starts[a][i] ? at::full(out.sizes(), *starts[a][i], out.options())
                                              : at::Tensor());
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
    all_flags = at::from_blob(on_device, {2 * flags_per_arm},
                              at::TensorOptions().dtype(at::kInt).device(impl.device));
    for (int64_t a = 0; a < 2; ++a)
      arm_flags[static_cast<size_t>(a)] = all_flags.narrow(0, a * flags_per_arm, flags_per_arm);
    std::ostringstream key;
    key << op.name;
    for (const auto& t : arm[1].inputs[0]) key << ' ' << t.scalar_type() << t.sizes();
    for (const auto& [name, value] : attrs) key << ' ' << name << '=' << std::hexfloat << value;
    if (reference_graph.key != key.str()) {
      reference_graph = {};
      reference_graph.key = key.str();
      for (const auto& t : arm[1].inputs[0])
        reference_graph.inputs.push_back(at::empty(t.sizes(), t.options()));
    }
    before_buffers = reference_graph.inputs;
    for (const auto& t : arm[1].inputs[0])
      if (arm[0].kernel) before_backup.push_back(at::empty(t.sizes(), t.options()));
    for (size_t a = 0; a < 2; ++a)
      for (const auto& t : arm[1].outputs[0])
        after_buffers[a].push_back(at::empty(t.sizes(), t.options()));
  }

  CheckedArms::Hooks hooks() {
    CheckedArms::Hooks h;
    h.launch = [this](int a, size_t s) { launch(a, s); };
    if (options.flush_l2 && impl.flusher) h.flush = [this] { impl.flusher->flush(); };
    h.perturb = [this](int a, size_t s, bool before_flush) {
      timed_work([&] { swap_two(a, s, before_flush); });
    };
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
    check_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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
        KGATE_CUDA_CALL(cuda::launch_swap_elements(x, y, static_cast<int>(size),
                                                   static_cast<cudaStream_t>(impl.stream())));
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
    return on_gpu && dst.defined() && dst.is_contiguous() && src.is_contiguous() &&
           dst.nbytes() == src.nbytes() && dst.scalar_type() == src.scalar_type();
  }
  static void copy_into(at::Tensor& dst, const at::Tensor& src) {
    if (dst.defined() && dst.sizes() == src.sizes() && dst.scalar_type() == src.scalar_type())
      dst.copy_(src);
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
    if (!jobs.empty())
      KGATE_CUDA_CALL(cuda::launch_check_jobs(jobs, static_cast<cudaStream_t>(impl.stream())));
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
      for (size_t i = 0; i < before_buffers.size(); ++i)
        copy_job(before_backup.at(i), before_buffers[i]);
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
  // the case's rule (correctness::eager_allowance), the inputs against their copies. Only a launch
  // that this look does not clear is judged under the rule itself (judge_outputs, the oracle
  // included). It is queued right after the checked launch, between timed launches, so the host
  // work runs while the GPU still works through the launches queued before it; on the GPU the
  // comparisons are jobs of one kernel (with the input checks capture queued) raising the arm's
  // flags, read back once at the block's end (cleared). `pending[i]`, when defined: output i, not
  // yet copied out, which its comparison copies on the way (or a copy job, where it has none).
  void first_look(size_t a, std::vector<at::Tensor>& pending) {
    Check& k = check[a];
    const Tensors expected = look_reference(k.inputs_before);
    bool aten_used = false;
    // The ATen verdicts (none on the GPU for contiguous tensors: the flag kernels judge those).
    const auto raise = [&k](const at::Tensor& bad) {
      k.bad = k.bad.defined() ? k.bad.logical_or(bad) : bad;
    };
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
          const Tolerance tol =
              correctness::eager_allowance(output_rule(case_rule, dt, op.outputs[i]), dt);
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
      const Tolerance tol =
          correctness::eager_allowance(output_rule(case_rule, dt, op.outputs[i]), dt);
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
      if (flags_read.at(static_cast<size_t>(static_cast<int64_t>(a) * flags_per_arm + i)) != 0)
        return false;
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
        jobs.push_back(j);               // launched with the first look's
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
  std::optional<WrongWhileTimed> block_done(int64_t block,
                                            const std::array<int64_t, 2>& checked_set,
                                            bool settled) {
    if (on_gpu) {  // the device drained the block's launches: read the flags
      if (!settled)
        KGATE_CUDA_CALL(cudaStreamSynchronize(static_cast<cudaStream_t>(impl.stream())));
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
          memory.inputs_changed.push_back(q.add_int(
              k.flag_of_input[j] >= 0 ? k.flags[k.flag_of_input[j]] : k.input_changed[j]));
        CaseResult r;
        r.kcase = bank_case(bank_entry(block, set));
        judge_outputs(op, ref, r.kcase, case_rule, attrs, check[a].inputs_before,
                      check[a].outputs_after, q, memory, poison, true, starts[a], impl.device, {},
                      r, needs_oracle);
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
    const std::string where =
        "block " + std::to_string(last.block) + ", launch " + std::to_string(last.launch + 1) +
        " of " + std::to_string(2 * options.interleave.launches_per_arm) + " (buffer set " +
        std::to_string(static_cast<size_t>(last.launch) % sets) + ")";
    CaseResult& w = wrong.result;
    if (wrong.arm == 1) {
      w.rule = Reason::wrong_while_timed;
      w.message = "wrong while timed: '" + kernel.name +
                  "' passed its checks, but its output in a timed launch (" + where +
                  ", inputs of case " + w.kcase.id() + ") fails: " + w.message;
      w.repro = repro_command(kernel, w.kcase);
      cmp.decision = Outcome::failed;
      add_note(cmp.note, w.message);
      cmp.wrong_while_timed = std::move(w);
    } else {
      cmp.decision = Outcome::invalid;
      add_note(cmp.note, "baseline '" + arm[0].kernel->name + "' was wrong in a timed launch (" +
                             where + "): " + w.message);
    }
  }

  // The samples, the estimate and the decision of a run that finished (the speed gate's).
  void decide(const speed::InterleaveResult& r) {
    speed::GateInputs in;
    in.light = light;
    in.flush_l2 = options.flush_l2;
    in.max_budget_factor = options.interleave.max_budget_factor;
    in.min_blocks = options.interleave.min_blocks;
    in.candidate = kernel.name;
    in.baseline = arm[0].kernel ? arm[0].kernel->name : std::string("eager");
    speed::decide_comparison(r, in, cmp);
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
  std::array<Starts, 2> starts;        // each arm's outputs' start values (output_starts)
  std::array<Tensors, 2> start_fills;  // the same as tensors (undefined: none)
  bool refills = false;                // some arm has one
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

SpeedComparison Runner::time_case(const KernelInfo& kernel, const KernelInfo* baseline,
                                  const Case& c, const TimingOptions& options, uint64_t seed,
                                  const correctness::RuleConfig* rule) {
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
    cmp.note =
        "not timed: '" + kernel.name + "' and baseline '" + baseline->name +
        "' run byte-identical code (every CUBIN and the manifest but name and version; digest " +
        kernel.code_digest.substr(0, 16) + ")";
    return cmp;
  }
  try {
    Impl::CheckedTiming(*impl_, kernel, baseline, c, options, seed, rule, cmp).run();
  } catch (const Error& e) {
    cmp.decision = Outcome::invalid;
    cmp.note = std::string("timing failed: ") + e.what();
    impl_->lose_context_if_faulted("the CUDA context was lost while timing kernel '" + kernel.name +
                                   "'");
  }
  return cmp;
}

}  // namespace kgate
