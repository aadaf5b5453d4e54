// A case's judging statistics in one pass over its outputs (runtime/judge_outputs.cpp): per output,
// the errors against the eager reference (allclose ratio, worst element, the atol a sweep's rtols
// need), against the float64 oracle, eager's own error, the relative rules' ratio, the ULP
// distance, the elements still holding the poison and the output's fingerprint. One launch and one
// small combine on a GPU (or a loop on the CPU) where the same figures took some 450 ATen
// operators a case. Each figure is the one those operators gave, to the bit: the element
// arithmetic is IEEE double with no contraction (judge_stats_math.hpp), and every reduction is a
// maximum, an integer sum or a first-index argmax, which no order changes.
// Torch-free: the runtime hands it contiguous buffers.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace kgate::cuda::judge {

/// Element types an operand may hold (each read exactly as a double).
enum class ElemType : int32_t { f64, f32, f16, bf16, f8e4m3, i8, u8, i32, i64, b8 };

/// The most rtols of a sweep one pass measures (more: the caller judges another way).
constexpr int kMaxSweep = 16;

struct Operand {
  const void* data = nullptr;  ///< `count` contiguous elements
  ElemType type = ElemType::f64;
};

/// One output's work. `out`, `expected` and `oracle` are required (with no oracle run, the
/// eager reference stands in); `magnitude` only for a conditioned relative rule.
struct OutputJob {
  int64_t count = 0;
  Operand out, expected, oracle, magnitude;
  // Against the eager reference: allclose under (atol, rtol); `edge` > 0: an infinity against a
  // finite value of the same sign at least this large is no NaN/Inf mismatch.
  double atol = 0, rtol = 0, edge = 0;
  int sweeps = 0;
  double sweep_rtol[kMaxSweep] = {};
  /// Errors against the oracle and eager's own error (else those stay zero).
  bool with_oracle = false;
  /// |out - oracle| <= ratio_k * max(|eager - oracle|, eps |oracle|) + atol, conditioned adding
  /// eps_acc (|magnitude| + length |oracle|) inside the max.
  bool relative = false, conditioned = false;
  double ratio_k = 0, eps = 0, eps_acc = 0, length = 0;
  /// ULP distance of out and expected (both floating, one dtype).
  bool ulp = false;
  /// Elements whose bits equal `poison` (the output's size); with `poison_where_expected_differs`,
  /// only where expected's bits do not (a one-byte poison is a value kernels write).
  bool unwritten = false, poison_where_expected_differs = false;
  int64_t poison = 0;
  /// sum over k of bits(out[k]) * (k * 2654435761 + fingerprint_offset), wrapping.
  bool fingerprint = false;
  int64_t fingerprint_offset = 1;
};

/// One output's figures, in 8-byte words (the layout the device writes).
struct OutputStats {
  double ref_max_abs, ref_max_rel;
  int64_t ref_nan_mismatches, ref_mismatches;
  double worst_ratio;
  int64_t worst_index;
  double worst_out, worst_target;
  double needed_atol[kMaxSweep];
  double oracle_max_abs, oracle_max_rel;
  int64_t oracle_nan_mismatches;
  double reference_vs_oracle_max_abs;
  double relative_worst;
  int64_t relative_mismatches;
  int64_t max_ulp, unwritten, fingerprint;
};
static_assert(sizeof(OutputStats) % 8 == 0, "OutputStats is read back as 8-byte words");
constexpr int kStatsWords = static_cast<int>(sizeof(OutputStats) / 8);

/// Runs `jobs` on `stream` into `stats` (device memory, one OutputStats per job). `scratch`:
/// device memory of at least scratch_bytes(jobs) bytes. Asynchronous.
size_t scratch_bytes(const std::vector<OutputJob>& jobs);
cudaError_t launch_judge_stats(const std::vector<OutputJob>& jobs, OutputStats* stats,
                               void* scratch, cudaStream_t stream);

/// The same on the CPU. `parallel(n, body)` runs body(0) .. body(n - 1), in any order and
/// concurrently if it likes (empty: one after another).
using ParallelFor = std::function<void(int64_t, const std::function<void(int64_t)>&)>;
void judge_stats_host(const std::vector<OutputJob>& jobs, OutputStats* stats,
                      const ParallelFor& parallel = {});

}  // namespace kgate::cuda::judge
