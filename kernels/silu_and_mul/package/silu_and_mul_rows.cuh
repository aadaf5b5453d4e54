// The device code of silu_and_mul_vec: y[r, j] = silu(x[r, j]) * x[r, H + j] for x:[B,2H],
// y:[B,H]. Compiled by nvcc into the in-tree kernel (kernels/silu_and_mul/silu_and_mul_vec.cu) and
// by NVRTC as package silu_and_mul_vec_pkg, so checking the package checks this code.
// NVRTC-compatible: no host headers.
//   silu_and_mul_vec16:  16-byte vector loads and stores; both halves of every row and every
//                        output row must start 16-byte aligned;
//   silu_and_mul_scalar: any strides and alignment, grid-stride over the B*H outputs.
// silu(a) = a / (1 + exp(-a)) in float, the product in float, rounded once (ATen rounds silu(a)
// first: within one ulp).
#pragma once

#include "kgate_device.cuh"

namespace kgate_device {

__device__ __forceinline__ float silu_mul(float a, float b) { return a / (1.f + expf(-a)) * b; }

/// Strides in elements.
template <typename T>
__global__ void silu_and_mul_scalar(const T* __restrict__ x, T* __restrict__ y, i64 rows, i64 h,
                                    i64 xs0, i64 xs1, i64 ys0, i64 ys1) {
  const i64 total = rows * h;
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<i64>(gridDim.x) * blockDim.x) {
    const i64 r = i / h, j = i % h;
    const float a = to_float(x[r * xs0 + j * xs1]), b = to_float(x[r * xs0 + (j + h) * xs1]);
    y[r * ys0 + j * ys1] = from_float<T>(silu_mul(a, b));
  }
}

/// Rows of whole 16-byte vectors: hv vectors per half-row; xs0, ys0 in elements.
template <typename T>
__global__ void silu_and_mul_vec16(const T* __restrict__ x, T* __restrict__ y, i64 rows, i64 hv,
                                   i64 xs0, i64 ys0) {
  using V = Vec16<T>;
  const i64 total = rows * hv;
  const i64 h = hv * V::kN;
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<i64>(gridDim.x) * blockDim.x) {
    const i64 r = i / hv, j = i % hv;
    const V a = reinterpret_cast<const V*>(x + r * xs0)[j];
    const V b = reinterpret_cast<const V*>(x + r * xs0 + h)[j];
    V out;
#pragma unroll
    for (int k = 0; k < V::kN; ++k)
      out.v[k] = from_float<T>(silu_mul(to_float(a.v[k]), to_float(b.v[k])));
    reinterpret_cast<V*>(y + r * ys0)[j] = out;
  }
}

}  // namespace kgate_device
