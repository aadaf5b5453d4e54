// The device code of quantize_int8_rows (compiled into the build from this package; its mutants in
// kernels/quantize_int8/quantize_int8_rows.cu) and of package quantize_int8_rows_pkg.
// NVRTC-compatible: no host headers. One block per row: a block reduction of |x| gives the row's
// scale, max(amax, 1e-10) / 127 (IEEE division), then each element is divided by it and rounded to
// nearest even (rintf), clamped to
// [-127, 127]. x, q and scale of any strides.
#pragma once

#include "kgate_device.cuh"

namespace kgate_device {

// kVariant 0: correct. 1 (mutant): rounds toward zero. 2 (mutant): the scale from max(x), not
// max(|x|).
template <typename T, int kVariant>
__global__ void quantize_int8_rows(const T* __restrict__ x, signed char* __restrict__ q,
                                   float* __restrict__ scale, i64 h, i64 x_row, i64 x_col,
                                   i64 q_row, i64 q_col, i64 s_row) {
  __shared__ float partial[32];
  const i64 row = blockIdx.x;
  const T* xr = x + row * x_row;
  float amax = 0.f;
  for (i64 j = threadIdx.x; j < h; j += blockDim.x) {
    const float v = to_float(xr[j * x_col]);
    amax = fmaxf(amax, kVariant == 2 ? v : fabsf(v));
  }
  amax = block_reduce<true>(amax, partial);
  const float s = fmaxf(amax, 1e-10f) / 127.0f;
  if (threadIdx.x == 0) scale[row * s_row] = s;
  signed char* qr = q + row * q_row;
  for (i64 j = threadIdx.x; j < h; j += blockDim.x) {
    const float r = to_float(xr[j * x_col]) / s;
    const float v = kVariant == 1 ? truncf(r) : rintf(r);
    qr[j * q_col] = static_cast<signed char>(fminf(fmaxf(v, -127.f), 127.f));
  }
}

}  // namespace kgate_device
