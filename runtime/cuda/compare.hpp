// Checked timing's first look at a timed launch, as single kernels that raise a device flag: an
// output not within (rtol, atol) of the reference, or an input whose bytes changed. One flag read
// per block instead of a chain of ATen ops per tensor.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace kgate::cuda {

/// Element types launch_flag_not_close compares.
enum class CloseType : int { f32, f16, bf16, f64 };

/// `flag` may be device memory or mapped page-locked host memory (a plain store of 1 by any block
/// that finds a difference, never a read).
/// Sets *flag to 1 when any of the `count` contiguous elements of `out` is not close to `want`:
/// |out - want| <= atol + rtol |want|, NaN matching NaN and an infinity matching the same infinity
/// (at::isclose with equal_nan).
cudaError_t launch_flag_not_close(const void* out, const void* want, int64_t count, CloseType type, double rtol,
                                  double atol, int* flag, cudaStream_t stream);

/// Sets *flag to 1 when the `bytes` bytes at `a` and `b` differ.
cudaError_t launch_flag_bytes_differ(const void* a, const void* b, int64_t bytes, int* flag, cudaStream_t stream);

}  // namespace kgate::cuda
