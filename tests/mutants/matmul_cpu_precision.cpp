// Mutants (cpu backend) on the op of kernels/gemm/package/matmul.op.json, f32 only, for CI
// machines without a GPU: the bugs of matmul_precision.cu in C++. K summed 0..K-1 in float, any
// strides, but a and b rounded before the multiply:
//   mutant_matmul_cpu_bf16_inputs  to bfloat16 (8 significant bits, nearest-even)
//   mutant_matmul_cpu_tf32         to TF32 (11 significant bits, nearest, ties away)
// The random family must reject both.
#include <cstdint>
#include <cstring>

#include "core/error.hpp"
#include "runtime/kernel.hpp"

namespace kgate::mutants {
namespace {

/// v with its low `drop` mantissa bits rounded off (nearest; ties to even or away from zero).
/// Inf and NaN pass unchanged; a value that rounds past the largest finite one becomes Inf.
float round_mantissa(float v, int drop, bool ties_even) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u) return v;
  const uint32_t half = 1u << (drop - 1);
  u += ties_even ? half - 1 + ((u >> drop) & 1u) : half;
  u &= ~((1u << drop) - 1);
  std::memcpy(&v, &u, sizeof v);
  return v;
}

enum Rounding { kBf16, kTf32 };

template <int kRounding>
float round_input(float v) {
  return kRounding == kBf16 ? round_mantissa(v, 16, true)    // BUG: 8 bits kept
                            : round_mantissa(v, 13, false);  // BUG: 11 bits kept
}

template <int kRounding>
void launch(const KernelCall& call) {
  const TensorView& a = call.inputs.at(0);
  const TensorView& b = call.inputs.at(1);
  const TensorView& out = call.outputs.at(0);
  if (a.dtype != DType::f32) throw Error(ErrorKind::usage, "mutant_matmul_cpu: only f32");
  const int64_t m = a.sizes[0], k = a.sizes[1], n = b.sizes[1];
  const float* ap = a.as<const float>();
  const float* bp = b.as<const float>();
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      float acc = 0.f;
      for (int64_t kk = 0; kk < k; ++kk)
        acc += round_input<kRounding>(ap[r * a.strides[0] + kk * a.strides[1]]) *
               round_input<kRounding>(bp[kk * b.strides[0] + c * b.strides[1]]);
      out.as<float>()[r * out.strides[0] + c * out.strides[1]] = acc;
    }
}

KernelInfo info(const char* name, void (*fn)(const KernelCall&)) {
  KernelInfo k;
  k.name = name;
  k.op = "matmul";
  k.backend = Backend::cpu;
  k.dtypes = {DType::f32};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;
  k.source = "tests/mutants/matmul_cpu_precision.cpp";
  k.mutant = true;
  k.control = false;
  k.expected_catch = "random";
  k.launch = fn;
  return k;
}

KGATE_REGISTER_KERNEL(info("mutant_matmul_cpu_bf16_inputs", launch<kBf16>));
KGATE_REGISTER_KERNEL(info("mutant_matmul_cpu_tf32", launch<kTf32>));

}  // namespace
}  // namespace kgate::mutants
