// Checked timing's work on a checked launch's buffers, as one kernel launch for a list of jobs:
// copies (the inputs before the launch, the fill of its outputs), and first looks that raise a
// flag: an output not within (rtol, atol) of the reference, or an input whose bytes changed (the
// output copied out on the way). One launch instead of one API call per tensor; one flag read per
// block instead of a chain of ATen ops per tensor.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace kgate::cuda {

/// Element types a not_close job compares.
enum class CloseType : int { f32, f16, bf16, f64 };

/// One job of launch_check_jobs. `flag` may be device memory or mapped page-locked host memory (a
/// plain store of 1 by any block that finds a difference, never a read).
struct CheckJob {
  enum class Kind : int {
    copy,          ///< `count` bytes from `a` to `copy_to`
    bytes_differ,  ///< *flag = 1 when the `count` bytes at `a` and `b` differ
    /// *flag = 1 when any of the `count` contiguous elements of `a` is not close to `b`:
    /// |a - b| <= atol + rtol |b|, NaN matching NaN and an infinity the same infinity
    /// (at::isclose with equal_nan)
    not_close,
  };
  Kind kind = Kind::copy;
  const void* a = nullptr;
  const void* b = nullptr;
  /// copy; for the comparisons, when set, `a` is also copied there (its `count` bytes or elements).
  void* copy_to = nullptr;
  int64_t count = 0;
  CloseType type = CloseType::f32;
  double rtol = 0, atol = 0;
  int* flag = nullptr;
};

/// Runs the jobs on `stream`, in as few launches as the job table allows (8 jobs a launch). The
/// jobs of one launch run concurrently: none may write what another reads.
cudaError_t launch_check_jobs(const std::vector<CheckJob>& jobs, cudaStream_t stream);

}  // namespace kgate::cuda
