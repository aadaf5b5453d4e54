// The checks of a kernel besides its judged cases: behaviour and null calibration.
#include "runtime/behaviour_checks.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>

#include "runtime/cuda/check.hpp"

namespace kgate {

namespace {

void record(CorrectnessReport& c, CaseResult r, size_t keep) {
  if (r.rule == Reason::reference_error) {  // the op's, never the kernel's: said, not counted
    c.warnings.push_back("a behaviour check of case " + r.kcase.id() +
                         " was not judged: " + r.message);
    return;
  }
  if (r.outcome == Outcome::failed) {
    ++c.failed;
    if (c.failures.size() < keep) c.failures.push_back(std::move(r));
  }
}

// A null "kernel": writes zeros, or copies its first input's bytes, into the outputs. Device
// memory (cuda) goes through the runtime; host memory (cpu backend) through memcpy / memset.
KernelInfo null_kernel(const KernelInfo& kernel, const std::string& which) {
  KernelInfo k = kernel;
  k.name = "null_" + which;
  k.accepts = nullptr;
  const bool copy = which == "copy";
  const bool device = kernel.backend == Backend::cuda;
  k.launch = [copy, device](const KernelCall& call) {
    const auto stream = static_cast<cudaStream_t>(call.stream);
    for (const auto& out : call.outputs) {
      const size_t bytes = static_cast<size_t>(out.numel()) * dtype_size(out.dtype);
      size_t copied = 0;
      if (copy && !call.inputs.empty())
        copied = std::min(
            bytes, static_cast<size_t>(call.inputs[0].numel()) * dtype_size(call.inputs[0].dtype));
      auto* dst = static_cast<char*>(out.data);
      if (device) {
        if (copied > 0)
          KGATE_CUDA_CALL(
              cudaMemcpyAsync(dst, call.inputs[0].data, copied, cudaMemcpyDeviceToDevice, stream));
        if (bytes > copied)
          KGATE_CUDA_CALL(cudaMemsetAsync(dst + copied, 0, bytes - copied, stream));
      } else {
        if (copied > 0) std::memcpy(dst, call.inputs[0].data, copied);
        if (bytes > copied) std::memset(dst + copied, 0, bytes - copied);
      }
    }
  };
  return k;
}

}  // namespace

// Stale outputs, outputs written before, and bitwise determinism, on the first case of each family.
void run_behaviour_checks(Runner& runner, const KernelInfo& kernel, const OpSignature& op,
                          const std::vector<Case>& cases, const KernelSettings& settings,
                          const CheckOptions& options, KernelReport& report) {
  std::set<std::string> families;
  for (const auto& c : cases) {
    // The huge case is not run again: it costs seconds and gigabytes each time.
    if (c.family == "huge" || !families.insert(c.family).second || runner.context_lost()) continue;
    const auto rule = rule_for(op, c.dtype, settings);
    ++report.correctness.behaviour_checks;
    record(report.correctness, runner.check_stale(kernel, c, rule), options.max_failures_kept);
    ++report.correctness.behaviour_checks;
    record(report.correctness, runner.check_written_before(kernel, c, rule),
           options.max_failures_kept);
    if (op.deterministic) {
      ++report.correctness.behaviour_checks;
      record(report.correctness, runner.check_deterministic(kernel, c, rule),
             options.max_failures_kept);
    }
  }
}

void run_null_calibration(Runner& runner, const KernelInfo& kernel, const OpSignature& op,
                          const std::vector<Case>& cases, const KernelSettings& settings,
                          const CheckOptions& options, KernelReport& report) {
  for (const std::string which : {"zeros", "copy"}) {
    const KernelInfo nk = null_kernel(kernel, which);
    auto& per_family = report.correctness.null_calibration[which];
    for (const auto& c : cases) {
      if (c.family == "huge") continue;
      auto& counts = per_family[c.family.empty() ? "other" : c.family];
      if (counts.first >= options.null_calibration_cases || runner.context_lost()) continue;
      ++counts.first;
      if (runner.check_case(nk, c, rule_for(op, c.dtype, settings)).outcome == Outcome::failed)
        ++counts.second;
    }
    for (const auto& [family, counts] : per_family)
      if (counts.first > 0 && counts.second == 0)
        report.correctness.warnings.push_back(
            "case family '" + family + "' is too weak for op " + op.name + ": the " + which +
            " null kernel passes all " + std::to_string(counts.first) + " of its cases");
  }
}

}  // namespace kgate
