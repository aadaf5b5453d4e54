// The device code of gelu_elementwise (exact, erf) and gelu_tanh_elementwise (tanh approximation)
// over x:[B,N]. Compiled by nvcc into both in-tree kernels (each is its package, built with
// kgate_add_kernel PACKAGE) and by NVRTC as packages gelu_elementwise_pkg and
// gelu_tanh_elementwise_pkg, so checking the packages checks this code. NVRTC-compatible: no host
// headers.
// A package reads only files inside its own directory, so this file exists twice, byte-identical
// (tests/cli/package_copies.sh checks it): edit the one in package_gelu_elementwise/, which the
// in-tree kernels compile, then copy it to package_gelu_tanh_elementwise/.
//
// GELU in float as ATen's CUDA kernel computes it (same formulas, same NaN/Inf results):
//   exact: x * 0.5 * (1 + erf(x / sqrt(2)))      gelu(-Inf) = -Inf * 0 = NaN, gelu(+Inf) = +Inf
//   tanh:  0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
// Kernels: contiguous x and y, 16-byte aligned: gelu_vec16 over whole vectors, then gelu_flat over
// the remainder; contiguous but not aligned: gelu_flat over everything; any other strides:
// gelu_rows (scalar accesses).
#pragma once

#include "kgate_device.cuh"

namespace kgate_device {

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

template <bool kTanh>
__device__ __forceinline__ float gelu(float v) {
  return kTanh ? gelu_tanh(v) : gelu_erf(v);
}

/// Contiguous, 16-byte aligned: whole vectors [0, vectors).
template <typename T, bool kTanh>
__global__ void gelu_vec16(const T* __restrict__ x, T* __restrict__ y, i64 vectors) {
  using V = Vec16<T>;
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < vectors;
       i += static_cast<i64>(gridDim.x) * blockDim.x) {
    const V a = reinterpret_cast<const V*>(x)[i];
    V out;
#pragma unroll
    for (int k = 0; k < V::kN; ++k) out.v[k] = from_float<T>(gelu<kTanh>(to_float(a.v[k])));
    reinterpret_cast<V*>(y)[i] = out;
  }
}

/// Contiguous: elements [begin, end).
template <typename T, bool kTanh>
__global__ void gelu_flat(const T* __restrict__ x, T* __restrict__ y, i64 begin, i64 end) {
  for (i64 i = begin + static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < end;
       i += static_cast<i64>(gridDim.x) * blockDim.x)
    y[i] = from_float<T>(gelu<kTanh>(to_float(x[i])));
}

/// Any strides (in elements).
template <typename T, bool kTanh>
__global__ void gelu_rows(const T* __restrict__ x, T* __restrict__ y, i64 rows, i64 n, i64 xs0,
                          i64 xs1, i64 ys0, i64 ys1) {
  const i64 total = rows * n;
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<i64>(gridDim.x) * blockDim.x) {
    const i64 r = i / n, c = i % n;
    const float v = to_float(x[r * xs0 + c * xs1]);
    y[r * ys0 + c * ys1] = from_float<T>(gelu<kTanh>(v));
  }
}

}  // namespace kgate_device
