// The device code of rotary_block and rotary_interleaved_block (compiled into the build from the
// two packages; the mutants in kernels/rotary_embedding/rotary_block.cu) and of their packages.
// NVRTC-compatible: no host headers. One block per (token, head): each thread rotates pairs of q in
// place, reading cos/sin at the token's int64 position; half-split pairs are (j, j + D2),
// interleaved pairs (2j, 2j + 1). The products are rounded as the eager reference rounds them (no
// fused multiply-add). Any strides.
#pragma once

#include "kgate_device.cuh"

namespace kgate_device {

// kVariant 0: correct. 1 (mutant): positions read as int32. 2 (mutant): positions clamped to P-2.
template <typename T, bool kInterleaved, int kVariant>
__global__ void rotary_rows(T* q, const T* cos, const T* sin, const i64* positions, i64 heads,
                            i64 d2, i64 cache_rows, i64 q0, i64 q1, i64 q2, i64 c0, i64 c1, i64 s0,
                            i64 s1, i64 p0) {
  const i64 row = blockIdx.x;
  const i64 t = row / heads, h = row % heads;
  i64 p = kVariant == 1 ? static_cast<i64>(reinterpret_cast<const int*>(positions)[t * p0])
                        : positions[t * p0];
  if (kVariant == 2 && p > cache_rows - 2) p = cache_rows >= 2 ? cache_rows - 2 : 0;
  T* qr = q + t * q0 + h * q1;
  for (i64 j = threadIdx.x; j < d2; j += blockDim.x) {
    const float c = to_float(cos[p * c0 + j * c1]), s = to_float(sin[p * s0 + j * s1]);
    const i64 i1 = kInterleaved ? 2 * j : j, i2 = kInterleaved ? 2 * j + 1 : j + d2;
    const float x1 = to_float(qr[i1 * q2]), x2 = to_float(qr[i2 * q2]);
    qr[i1 * q2] = from_float<T>(__fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, s)));
    qr[i2 * q2] = from_float<T>(__fadd_rn(__fmul_rn(x2, c), __fmul_rn(x1, s)));
  }
}

}  // namespace kgate_device
