// The device code and launcher of control_rotary_fma (rotary_fma.cu) and control_rotary_nofma
// (rotary_nofma.cu, the same text built with --fmad=false), on the half-split op of
// kernels/rotary_embedding/package_half_split/rotary_embedding.op.json: q rotated in place by
// the cos/sin rows at each token's int64 position, pairs (j, j + D2). One 128-thread block per
// (token, head); f32, f16 and bf16; any strides. The rotation is the plain formula
//   out1 = x1 * c - x2 * s,  out2 = x2 * c + x1 * s
// in float, as written: with --fmad=true nvcc fuses one product of each line into a multiply-add
// (one rounding fewer than eager, which rounds both products), with --fmad=false it rounds both.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/kgate_device.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace kgate::controls {
namespace {

constexpr int kRotaryThreads = 128;

template <typename T>
__global__ void rotary_plain(T* q, const T* cos, const T* sin, const long long* positions,
                             int64_t heads, int64_t d2, int64_t q0, int64_t q1, int64_t q2,
                             int64_t c0, int64_t c1, int64_t s0, int64_t s1, int64_t p0) {
  const int64_t row = blockIdx.x, t = row / heads, h = row % heads;
  const int64_t p = positions[t * p0];
  T* qr = q + t * q0 + h * q1;
  for (int64_t j = threadIdx.x; j < d2; j += blockDim.x) {
    const float c = kgate_device::to_float(cos[p * c0 + j * c1]);
    const float s = kgate_device::to_float(sin[p * s0 + j * s1]);
    const float x1 = kgate_device::to_float(qr[j * q2]);
    const float x2 = kgate_device::to_float(qr[(j + d2) * q2]);
    qr[j * q2] = kgate_device::from_float<T>(x1 * c - x2 * s);
    qr[(j + d2) * q2] = kgate_device::from_float<T>(x2 * c + x1 * s);
  }
}

template <typename T>
void run_rotary(const KernelCall& call) {
  // inputs: q, cos, sin, positions; the output q_out is q's buffer (written in place).
  const TensorView& q = call.outputs.at(0);
  const TensorView& cos = call.inputs.at(1);
  const TensorView& sin = call.inputs.at(2);
  const TensorView& pos = call.inputs.at(3);
  const int64_t tokens = q.sizes[0], heads = q.sizes[1], d2 = q.sizes[2] / 2;
  if (tokens == 0 || heads == 0 || d2 == 0) return;
  rotary_plain<T><<<static_cast<unsigned>(tokens * heads), kRotaryThreads, 0,
                    static_cast<cudaStream_t>(call.stream)>>>(
      q.as<T>(), cos.as<const T>(), sin.as<const T>(), pos.as<const long long>(), heads, d2,
      q.strides[0], q.strides[1], q.strides[2], cos.strides[0], cos.strides[1], sin.strides[0],
      sin.strides[1], pos.strides[0]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch_rotary(const KernelCall& call) {
  dispatch_floating(call.inputs.at(0).dtype, "control_rotary",
                    [&](auto t) { run_rotary<element_t<decltype(t)>>(call); });
}

KernelInfo rotary_control(const char* name, const char* source) {
  KernelInfo k = cuda_kernel(name, "rotary_embedding", source, launch_rotary);
  k.tile_sizes = {kRotaryThreads};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;
  k.mutant = true;
  k.control = true;
  k.expected_catch = "control";
  return k;
}

}  // namespace
}  // namespace kgate::controls
