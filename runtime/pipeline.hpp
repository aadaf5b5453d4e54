// The check pipeline of one kernel: cases -> correctness (shrink on failure) -> interleaved timing
// -> KernelReport. Torch-free; the Runner does the tensor work.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/report.hpp"
#include "gates/props/generators.hpp"
#include "runtime/kernel.hpp"
#include "runtime/runner.hpp"

namespace kgate {

struct CheckOptions {
  uint64_t seed = 1;
  int64_t cases = 64;
  std::vector<std::string> families;  ///< empty: all that apply
  std::string rule = "allclose";
  std::optional<double> atol;         ///< overrides the op's default for every dtype
  std::optional<double> rtol;
  bool shrink = true;
  size_t max_failures_kept = 10;
  bool speed = true;
  int64_t speed_cases = 3;
  TimingOptions timing;
  /// Progress lines ("softmax_block: 12/64 cases"); may be empty.
  std::function<void(const std::string&)> progress;
};

props::KernelTraits traits_of(const KernelInfo& kernel);

/// The rule for one case: op default tolerance per dtype, overridden by options.
correctness::RuleConfig rule_for(const OpSignature& op, DType dtype, const CheckOptions& options);

/// Representative shapes for timing: mid-size to large, cycling through the kernel's dtypes.
std::vector<Case> speed_cases(const OpSignature& op, const KernelInfo& kernel, uint64_t seed, int64_t count);

/// Checks one kernel: correctness over generated cases, the first failure shrunk, then timing
/// against the eager reference (only when every case passed).
KernelReport check_kernel(Runner& runner, const KernelInfo& kernel, const CheckOptions& options);

/// Holm-adjusts the p-values of every speed comparison of a run; a regression whose adjusted
/// p-value exceeds its alpha becomes inconclusive.
void adjust_speed_decisions(std::vector<KernelReport>& kernels);

}  // namespace kgate
