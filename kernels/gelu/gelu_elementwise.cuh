// The GELU kernels over x:[B,N] shared by gelu_elementwise (exact) and gelu_tanh_elementwise
// (tanh), float math. Contiguous x and y: a flat grid-stride loop, with 16-byte vector accesses
// when both start 16-byte aligned (the remainder scalar); otherwise any strides, scalar accesses.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "kernels/common/elementwise.cuh"
#include "kernels/common/softmax_math.cuh"
#include "kernels/gelu/gelu_math.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels::gelu_detail {

template <bool kTanh>
__device__ __forceinline__ float gelu(float v) {
  return kTanh ? gelu_tanh(v) : gelu_erf(v);
}

// Contiguous, 16-byte aligned: whole vectors [0, vectors).
template <typename T, bool kTanh>
__global__ void gelu_vec16(const T* __restrict__ x, T* __restrict__ y, int64_t vectors) {
  using V = Vec16<T>;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < vectors;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const V a = reinterpret_cast<const V*>(x)[i];
    V out;
#pragma unroll
    for (int k = 0; k < V::kN; ++k) out.v[k] = from_float<T>(gelu<kTanh>(to_float(a.v[k])));
    reinterpret_cast<V*>(y)[i] = out;
  }
}

// Contiguous: elements [begin, end).
template <typename T, bool kTanh>
__global__ void gelu_flat(const T* __restrict__ x, T* __restrict__ y, int64_t begin, int64_t end) {
  for (int64_t i = begin + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < end;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = from_float<T>(gelu<kTanh>(to_float(x[i])));
}

// Any strides.
template <typename T, bool kTanh>
__global__ void gelu_rows(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t n,
                          int64_t xs0, int64_t xs1, int64_t ys0, int64_t ys1) {
  const int64_t total = rows * n;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / n, c = i % n;
    const float v = to_float(x[r * xs0 + c * xs1]);
    y[r * ys0 + c * ys1] = from_float<T>(gelu<kTanh>(v));
  }
}

template <typename T, bool kTanh>
void run(const KernelCall& call, const char* name) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& y = call.outputs.at(0);
  if (x.dim() != 2 || y.dim() != 2)
    throw Error(ErrorKind::usage, std::string(name) + ": expects x:[B,N], y:[B,N]");
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  auto stream = static_cast<cudaStream_t>(call.stream);
  const int64_t total = rows * n;
  if (x.is_contiguous() && y.is_contiguous()) {
    int64_t done = 0;
    if (aligned16(x.data) && aligned16(y.data)) {
      const int64_t vectors = total / Vec16<T>::kN;
      if (vectors > 0)
        gelu_vec16<T, kTanh><<<elementwise_blocks(vectors), kElementwiseThreads, 0, stream>>>(
            x.as<const T>(), y.as<T>(), vectors);
      done = vectors * Vec16<T>::kN;
    }
    if (done < total)
      gelu_flat<T, kTanh><<<elementwise_blocks(total - done), kElementwiseThreads, 0, stream>>>(
          x.as<const T>(), y.as<T>(), done, total);
  } else {
    gelu_rows<T, kTanh><<<elementwise_blocks(total), kElementwiseThreads, 0, stream>>>(
        x.as<const T>(), y.as<T>(), rows, n, x.strides[0], x.strides[1], y.strides[0],
        y.strides[1]);
  }
  KGATE_CUDA_CALL(cudaGetLastError());
}

/// Runs the kernel on the call's dtype.
template <bool kTanh>
void launch(const KernelCall& call, const char* name) {
  switch (call.inputs.at(0).dtype) {
    case DType::f32: return run<float, kTanh>(call, name);
    case DType::f16: return run<__half, kTanh>(call, name);
    case DType::bf16: return run<__nv_bfloat16, kTanh>(call, name);
    default: throw Error(ErrorKind::usage, std::string(name) + ": unsupported dtype");
  }
}

}  // namespace kgate::kernels::gelu_detail
