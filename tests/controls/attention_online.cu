// control_attention_online: a correct attention kernel on the op of
// tests/ops/attention/attention.op.json (o = softmax(q k^T / sqrt(D)) v; f32, f16 and bf16 in
// and out, float inside), computed as flash attention does: keys and values arrive in tiles, and
// each query row keeps a running max m (from -inf), a running sum l of exp(s - m) and an output
// accumulator, both rescaled by exp(m_old - m_new) whenever a tile raises the max. Its summation
// orders (the D-long dot products, the sum over keys, the rescalings) differ from eager's; under
// the op's conditioning it must pass.
//
// A block of 4 warps holds 4 query rows of one (batch, head), one row per warp; the block loads
// each 32-key tile of k and v into shared memory (as 16-byte vectors when a row of D elements is
// a whole number of them) and every warp consumes it: lane j scores key j of the tile, lane t
// accumulates output dims t, t + 32, t + 64, t + 96. D <= 128.
//
// Its guard (tests/controls/attention_guard.hpp) takes dense, 16-byte aligned tensors only: the
// strided, row-padded and misaligned cases of the layout family fall outside it, and kgate runs
// the op's reference (torch.scaled_dot_product_attention) on those views as the fallback.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "core/error.hpp"
#include "kernels/common/kgate_device.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"
#include "tests/controls/attention_guard.hpp"

namespace kgate::controls {
namespace {

using kgate_device::from_float;
using kgate_device::i64;
using kgate_device::infinity;
using kgate_device::to_float;
using kgate_device::Vec16;

constexpr int kRows = 4;   ///< query rows per block, one per warp
constexpr int kKeys = 32;  ///< keys per tile, one per lane when scoring
constexpr int kMaxD = 128;
constexpr int kThreads = 32 * kRows;

/// Sizes of one call; q and o are [bh, s, d], k and v [bh, l, d], dense.
struct Dims {
  i64 bh, s, l, d;
};

/// Copies `n` consecutive elements from `src` into the tile `dst` (row length d, row pitch
/// kMaxD + 1 floats), as floats. kVec: 16-byte loads (src 16-byte aligned, d a multiple of them).
template <typename T, bool kVec>
__device__ void load_tile(const T* src, i64 n, int d, float (*dst)[kMaxD + 1]) {
  if (kVec) {
    constexpr int kN = Vec16<T>::kN;
    const auto* vsrc = reinterpret_cast<const Vec16<T>*>(src);
    for (i64 vi = threadIdx.x; vi < n / kN; vi += kThreads) {
      const Vec16<T> piece = vsrc[vi];
#pragma unroll
      for (int u = 0; u < kN; ++u) {
        const i64 e = vi * kN + u;
        dst[e / d][e % d] = to_float(piece.v[u]);
      }
    }
  } else {
    for (i64 e = threadIdx.x; e < n; e += kThreads) dst[e / d][e % d] = to_float(src[e]);
  }
}

template <typename T, bool kVec>
__global__ void __launch_bounds__(kThreads)
    attention_online(const T* q, const T* k, const T* v, T* o, Dims g, float scale) {
  // Pitch kMaxD + 1: the lanes, each reading its own key's row, hit distinct banks.
  __shared__ float ks[kKeys][kMaxD + 1];
  __shared__ float vs[kKeys][kMaxD + 1];
  __shared__ float qs[kRows][kMaxD];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const i64 row_tiles = (g.s + kRows - 1) / kRows;
  const i64 bh = static_cast<i64>(blockIdx.x) / row_tiles;
  const i64 row = static_cast<i64>(blockIdx.x) % row_tiles * kRows + warp;
  const bool active = row < g.s;  // every warp loads tiles; only those with a row score them
  const int d = static_cast<int>(g.d);
  if (active)
    for (int c = lane; c < d; c += 32) qs[warp][c] = to_float(q[(bh * g.s + row) * g.d + c]);

  float m = -infinity();  // running max of the scores seen
  float l = 0.f;          // running sum of exp(score - m)
  float acc[kMaxD / 32] = {};
  const T* kbh = k + bh * g.l * g.d;
  const T* vbh = v + bh * g.l * g.d;
  for (i64 k0 = 0; k0 < g.l; k0 += kKeys) {
    const int keys = static_cast<int>(min(static_cast<i64>(kKeys), g.l - k0));
    __syncthreads();  // the previous tile is consumed (and, the first time, qs is written)
    load_tile<T, kVec>(kbh + k0 * g.d, keys * g.d, d, ks);
    load_tile<T, kVec>(vbh + k0 * g.d, keys * g.d, d, vs);
    __syncthreads();
    if (!active) continue;
    float s = -infinity();
    if (lane < keys) {
      float dot = 0.f;
      for (int c = 0; c < d; ++c) dot = fmaf(qs[warp][c], ks[lane][c], dot);
      s = dot * scale;
    }
    const float m_new = fmaxf(m, kgate_device::warp_max(s));
    const float alpha = expf(m - m_new);  // 0 on the first tile (m = -inf)
    const float p = lane < keys ? expf(s - m_new) : 0.f;
    l = l * alpha + kgate_device::warp_sum(p);
#pragma unroll
    for (int t = 0; t < kMaxD / 32; ++t) acc[t] *= alpha;
    for (int j = 0; j < keys; ++j) {
      const float pj = __shfl_sync(0xffffffffu, p, j);
#pragma unroll
      for (int t = 0; t < kMaxD / 32; ++t) {
        const int c = lane + 32 * t;
        if (c < d) acc[t] = fmaf(pj, vs[j][c], acc[t]);
      }
    }
    m = m_new;
  }
  if (!active) return;
  T* orow = o + (bh * g.s + row) * g.d;
#pragma unroll
  for (int t = 0; t < kMaxD / 32; ++t) {
    const int c = lane + 32 * t;
    if (c < d) orow[c] = from_float<T>(acc[t] / l);
  }
}

template <typename T>
void run(const KernelCall& call) {
  if (const std::string why = attention_refusal(call, kMaxD); !why.empty())
    throw Error(ErrorKind::usage, "control_attention_online: " + why + " (the guard says so)");
  const TensorView& q = call.inputs.at(0);
  const TensorView& k = call.inputs.at(1);
  const Dims g{q.sizes[0] * q.sizes[1], q.sizes[2], k.sizes[2], q.sizes[3]};
  if (g.bh == 0 || g.s == 0 || g.d == 0) return;
  const auto stream = static_cast<cudaStream_t>(call.stream);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(g.d)));
  const auto blocks = static_cast<unsigned>(g.bh * ((g.s + kRows - 1) / kRows));
  const T* qp = q.as<const T>();
  const T* kp = k.as<const T>();
  const T* vp = call.inputs.at(2).as<const T>();
  T* op = call.outputs.at(0).as<T>();
  // Rows of whole 16-byte pieces on a 16-byte aligned base (the guard) start 16-byte aligned.
  if (g.d % Vec16<T>::kN == 0)
    attention_online<T, true><<<blocks, kThreads, 0, stream>>>(qp, kp, vp, op, g, scale);
  else attention_online<T, false><<<blocks, kThreads, 0, stream>>>(qp, kp, vp, op, g, scale);
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch(const KernelCall& call) {
  dispatch_floating(call.inputs.at(0).dtype, "control_attention_online",
                    [&](auto t) { run<element_t<decltype(t)>>(call); });
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k = cuda_kernel("control_attention_online", "attention",
                             "tests/controls/attention_online.cu", launch);
  // Ragged D (the op's reduced symbol) probes 32, 64 and 128 +-1: where each lane's second,
  // third and fourth output dims begin.
  k.tile_sizes = {kKeys};
  k.timed = false;  // a correctness control, not a deployment candidate
  k.mutant = true;
  k.control = true;
  k.expected_catch = "control";
  return with_attention_guard(std::move(k), kMaxD);
})());

}  // namespace
}  // namespace kgate::controls
