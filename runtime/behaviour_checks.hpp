// The checks of a kernel besides its judged cases: how it behaves (stale outputs, outputs written
// before, bitwise determinism) and the null kernels that tell whether a case family can catch
// anything. Used by the pipeline (pipeline.cpp); not installed.
#pragma once

#include <vector>

#include "runtime/pipeline.hpp"

namespace kgate {

/// Stale outputs, outputs written before, and bitwise determinism (ops that declare it), on the
/// first case of each family but the huge one; counted in report.correctness.behaviour_checks and
/// its failures (a check whose reference failed is a warning, never the kernel's).
void run_behaviour_checks(Runner& runner, const KernelInfo& kernel, const OpSignature& op,
                          const std::vector<Case>& cases, const KernelSettings& settings,
                          const CheckOptions& options, KernelReport& report);

/// The zeros and copy null kernels on up to options.null_calibration_cases cases per family: a
/// family that either passes everywhere is too weak for the op, and the report warns of it.
void run_null_calibration(Runner& runner, const KernelInfo& kernel, const OpSignature& op,
                          const std::vector<Case>& cases, const KernelSettings& settings,
                          const CheckOptions& options, KernelReport& report);

}  // namespace kgate
