// GELU in float as ATen's CUDA kernel computes it (same formulas, same NaN/Inf results):
//   exact: x * 0.5 * (1 + erf(x / sqrt(2)))      gelu(-Inf) = -Inf * 0 = NaN, gelu(+Inf) = +Inf
//   tanh:  0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
#pragma once

#include <cuda_runtime.h>

namespace kgate::kernels {

/// Exact (erf) GELU.
__device__ __forceinline__ float gelu_erf(float x) {
  constexpr float kAlpha = 0.70710678118654752440f;  // 1 / sqrt(2)
  return x * 0.5f * (1.f + erff(x * kAlpha));
}

/// tanh-approximated GELU.
__device__ __forceinline__ float gelu_tanh(float x) {
  constexpr float kBeta = 0.79788456080286535588f;  // sqrt(2 / pi)
  constexpr float kKappa = 0.044715f;
  const float cube = x * x * x;
  return 0.5f * x * (1.f + tanhf(kBeta * (x + kKappa * cube)));
}

}  // namespace kgate::kernels
