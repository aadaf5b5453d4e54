// Controls on the op of kernels/gemm/package/matmul.op.json: five correct GEMMs (bf16, f16 and f32
// in, float32 accumulation, out in the input dtype, any strides) whose K sums run in orders other
// than eager's (cuBLAS). Each must pass every family under kgate's defaults:
//   control_matmul_naive          one thread per output, K summed 0..K-1 with fmaf
//   control_matmul_smem_tiled     32 x 32 tiles in shared memory: a partial sum per 32-deep
//                                 K slice, the slices' partials added to the total in order
//   control_matmul_register_2d    64 x 64 block tile, 8-deep K slices, an 8 x 8 micro-tile of
//                                 accumulators per thread (outer-product updates), K summed
//                                 0..K-1 with fmaf
//   control_matmul_k_interleaved  four partial sums per output over k mod 4, added as a tree at the
//                                 end ((s0 + s1) + (s2 + s3))
//   control_matmul_split_k        K cut into S <= 8 chunks, one float32 partial per chunk in a
//                                 workspace, then a second kernel adding the S partials in chunk
//                                 order (deterministic: no atomics)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "core/error.hpp"
#include "kernels/common/kgate_device.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace kgate::controls {
namespace {

using kgate_device::from_float;
using kgate_device::i64;
using kgate_device::to_float;

/// Sizes and strides (elements) of one call: a:[M,K], b:[K,N], out:[M,N].
struct Gemm {
  i64 m, n, k;
  i64 a_row, a_col, b_row, b_col, o_row, o_col;
};

template <typename T>
__device__ __forceinline__ float load_a(const T* a, const Gemm& g, i64 r, i64 kx) {
  return r < g.m && kx < g.k ? to_float(a[r * g.a_row + kx * g.a_col]) : 0.f;
}
template <typename T>
__device__ __forceinline__ float load_b(const T* b, const Gemm& g, i64 kx, i64 c) {
  return kx < g.k && c < g.n ? to_float(b[kx * g.b_row + c * g.b_col]) : 0.f;
}

// --- naive: 16 x 16 threads per block, one output each -------------------------------------------

template <typename T>
__global__ void matmul_naive(const T* a, const T* b, T* out, Gemm g) {
  const i64 r = static_cast<i64>(blockIdx.y) * 16 + threadIdx.y;
  const i64 c = static_cast<i64>(blockIdx.x) * 16 + threadIdx.x;
  if (r >= g.m || c >= g.n) return;
  float acc = 0.f;
  for (i64 kx = 0; kx < g.k; ++kx)
    acc =
        fmaf(to_float(a[r * g.a_row + kx * g.a_col]), to_float(b[kx * g.b_row + c * g.b_col]), acc);
  out[r * g.o_row + c * g.o_col] = from_float<T>(acc);
}

// --- smem_tiled: 32 x 32 threads, 32 x 32 tiles of a and b in shared memory ---------------------

constexpr int kTile32 = 32;

template <typename T>
__global__ void matmul_smem_tiled(const T* a, const T* b, T* out, Gemm g) {
  __shared__ float as[kTile32][kTile32 + 1];
  __shared__ float bs[kTile32][kTile32 + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const i64 r = static_cast<i64>(blockIdx.y) * kTile32 + ty;
  const i64 c = static_cast<i64>(blockIdx.x) * kTile32 + tx;
  float acc = 0.f;
  for (i64 k0 = 0; k0 < g.k; k0 += kTile32) {
    as[ty][tx] = load_a(a, g, r, k0 + tx);
    bs[ty][tx] = load_b(b, g, k0 + ty, c);
    __syncthreads();
    float part = 0.f;  /// this slice's partial sum, added to the total once
#pragma unroll
    for (int kk = 0; kk < kTile32; ++kk) part = fmaf(as[ty][kk], bs[kk][tx], part);
    acc += part;
    __syncthreads();
  }
  if (r < g.m && c < g.n) out[r * g.o_row + c * g.o_col] = from_float<T>(acc);
}

// --- register_2d: 64 threads, a 64 x 64 block tile, 8 x 8 outputs per thread --------------------

constexpr int kBlock2d = 64, kDepth2d = 8, kMicro = 8, kThreads2d = 64;

template <typename T>
__global__ void matmul_register_2d(const T* a, const T* b, T* out, Gemm g) {
  __shared__ float as[kDepth2d][kBlock2d + 4];  // transposed: as[k][row]
  __shared__ float bs[kDepth2d][kBlock2d + 4];
  const i64 row0 = static_cast<i64>(blockIdx.y) * kBlock2d,
            col0 = static_cast<i64>(blockIdx.x) * kBlock2d;
  const int tr = threadIdx.x / (kBlock2d / kMicro), tc = threadIdx.x % (kBlock2d / kMicro);
  float acc[kMicro][kMicro] = {};
  for (i64 k0 = 0; k0 < g.k; k0 += kDepth2d) {
    for (int e = threadIdx.x; e < kBlock2d * kDepth2d; e += kThreads2d) {
      const int rr = e / kDepth2d, ka = e % kDepth2d;  // consecutive threads: along a row of a
      as[ka][rr] = load_a(a, g, row0 + rr, k0 + ka);
      const int kb = e / kBlock2d, cc = e % kBlock2d;  // consecutive threads: along a row of b
      bs[kb][cc] = load_b(b, g, k0 + kb, col0 + cc);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kDepth2d; ++kk) {
      float ra[kMicro], rb[kMicro];
#pragma unroll
      for (int i = 0; i < kMicro; ++i) ra[i] = as[kk][tr * kMicro + i];
#pragma unroll
      for (int j = 0; j < kMicro; ++j) rb[j] = bs[kk][tc * kMicro + j];
#pragma unroll
      for (int i = 0; i < kMicro; ++i)
#pragma unroll
        for (int j = 0; j < kMicro; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kMicro; ++i)
#pragma unroll
    for (int j = 0; j < kMicro; ++j) {
      const i64 r = row0 + tr * kMicro + i, c = col0 + tc * kMicro + j;
      if (r < g.m && c < g.n) out[r * g.o_row + c * g.o_col] = from_float<T>(acc[i][j]);
    }
}

// --- k_interleaved and split_k: 16 x 16 threads, 16-deep tiles of a and b in shared memory -------

constexpr int kTile16 = 16;

template <typename T>
__global__ void matmul_k_interleaved(const T* a, const T* b, T* out, Gemm g) {
  __shared__ float as[kTile16][kTile16 + 1];
  __shared__ float bs[kTile16][kTile16 + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const i64 r = static_cast<i64>(blockIdx.y) * kTile16 + ty;
  const i64 c = static_cast<i64>(blockIdx.x) * kTile16 + tx;
  float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;  /// s_q sums the products of k = q mod 4
  for (i64 k0 = 0; k0 < g.k; k0 += kTile16) {
    as[ty][tx] = load_a(a, g, r, k0 + tx);
    bs[ty][tx] = load_b(b, g, k0 + ty, c);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTile16; kk += 4) {
      s0 = fmaf(as[ty][kk], bs[kk][tx], s0);
      s1 = fmaf(as[ty][kk + 1], bs[kk + 1][tx], s1);
      s2 = fmaf(as[ty][kk + 2], bs[kk + 2][tx], s2);
      s3 = fmaf(as[ty][kk + 3], bs[kk + 3][tx], s3);
    }
    __syncthreads();
  }
  if (r < g.m && c < g.n) out[r * g.o_row + c * g.o_col] = from_float<T>((s0 + s1) + (s2 + s3));
}

/// Chunk z = blockIdx.z of K, [z * chunk, min(K, (z + 1) * chunk)), summed sequentially (k
/// ascending, fmaf) into ws[z][r][c]. chunk is a multiple of 16.
template <typename T>
__global__ void matmul_split_k_partial(const T* a, const T* b, float* ws, Gemm g, i64 chunk) {
  __shared__ float as[kTile16][kTile16 + 1];
  __shared__ float bs[kTile16][kTile16 + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const i64 r = static_cast<i64>(blockIdx.y) * kTile16 + ty;
  const i64 c = static_cast<i64>(blockIdx.x) * kTile16 + tx;
  const i64 k_begin = static_cast<i64>(blockIdx.z) * chunk, k_end = min(g.k, k_begin + chunk);
  float acc = 0.f;
  for (i64 k0 = k_begin; k0 < k_end; k0 += kTile16) {
    as[ty][tx] = k0 + tx < k_end ? load_a(a, g, r, k0 + tx) : 0.f;
    bs[ty][tx] = k0 + ty < k_end ? load_b(b, g, k0 + ty, c) : 0.f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTile16; ++kk) acc = fmaf(as[ty][kk], bs[kk][tx], acc);
    __syncthreads();
  }
  if (r < g.m && c < g.n) ws[(static_cast<i64>(blockIdx.z) * g.m + r) * g.n + c] = acc;
}

/// out[r][c] = ws[0][r][c] + ws[1][r][c] + ... + ws[S-1][r][c], left to right.
template <typename T>
__global__ void matmul_split_k_reduce(const float* ws, T* out, Gemm g, int splits) {
  const i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x, mn = g.m * g.n;
  if (i >= mn) return;
  float acc = ws[i];
  for (int z = 1; z < splits; ++z) acc += ws[z * mn + i];
  out[(i / g.n) * g.o_row + (i % g.n) * g.o_col] = from_float<T>(acc);
}

// --- launchers ----------------------------------------------------------------------------------

enum Kind { kNaive, kSmemTiled, kRegister2d, kKInterleaved, kSplitK };

unsigned blocks_of(int64_t extent, int tile) {
  return static_cast<unsigned>((extent + tile - 1) / tile);
}

template <typename T>
void run_split_k(const T* a, const T* b, T* out, const Gemm& g, cudaStream_t stream) {
  // S = min(8, ceil(K / 256)), fewer where S * M * N floats would pass 2^28 (1 GiB); chunks a
  // multiple of 16 deep, none empty.
  int64_t splits = std::min<int64_t>(8, (g.k + 255) / 256);
  while (splits > 1 && splits * g.m * g.n > (int64_t{1} << 28)) --splits;
  const int64_t chunk = ((g.k + splits - 1) / splits + kTile16 - 1) / kTile16 * kTile16;
  splits = (g.k + chunk - 1) / chunk;
  float* ws = nullptr;
  KGATE_CUDA_CALL(
      cudaMallocAsync(reinterpret_cast<void**>(&ws), sizeof(float) * splits * g.m * g.n, stream));
  const dim3 grid(blocks_of(g.n, kTile16), blocks_of(g.m, kTile16), static_cast<unsigned>(splits));
  matmul_split_k_partial<T><<<grid, dim3(kTile16, kTile16), 0, stream>>>(a, b, ws, g, chunk);
  const cudaError_t launched = cudaGetLastError();
  if (launched == cudaSuccess)
    matmul_split_k_reduce<T>
        <<<blocks_of(g.m * g.n, 256), 256, 0, stream>>>(ws, out, g, static_cast<int>(splits));
  const cudaError_t reduced = launched == cudaSuccess ? cudaGetLastError() : launched;
  KGATE_CUDA_CALL(cudaFreeAsync(ws, stream));
  KGATE_CUDA_CALL(reduced);
}

template <typename T, int kKind>
void run(const KernelCall& call) {
  const TensorView& a = call.inputs.at(0);
  const TensorView& b = call.inputs.at(1);
  const TensorView& out = call.outputs.at(0);
  const Gemm g{a.sizes[0],   b.sizes[1],   a.sizes[1],     a.strides[0],  a.strides[1],
               b.strides[0], b.strides[1], out.strides[0], out.strides[1]};
  if (g.m == 0 || g.n == 0) return;
  const auto stream = static_cast<cudaStream_t>(call.stream);
  const T* ap = a.as<const T>();
  const T* bp = b.as<const T>();
  T* op = out.as<T>();
  switch (kKind) {
    case kNaive:
      matmul_naive<T><<<dim3(blocks_of(g.n, 16), blocks_of(g.m, 16)), dim3(16, 16), 0, stream>>>(
          ap, bp, op, g);
      break;
    case kSmemTiled:
      matmul_smem_tiled<T><<<dim3(blocks_of(g.n, kTile32), blocks_of(g.m, kTile32)),
                             dim3(kTile32, kTile32), 0, stream>>>(ap, bp, op, g);
      break;
    case kRegister2d:
      matmul_register_2d<T>
          <<<dim3(blocks_of(g.n, kBlock2d), blocks_of(g.m, kBlock2d)), kThreads2d, 0, stream>>>(
              ap, bp, op, g);
      break;
    case kKInterleaved:
      matmul_k_interleaved<T><<<dim3(blocks_of(g.n, kTile16), blocks_of(g.m, kTile16)),
                                dim3(kTile16, kTile16), 0, stream>>>(ap, bp, op, g);
      break;
    case kSplitK:
      run_split_k<T>(ap, bp, op, g, stream);
      return;
  }
  KGATE_CUDA_CALL(cudaGetLastError());
}

template <int kKind>
void launch(const KernelCall& call) {
  dispatch_floating(call.inputs.at(0).dtype, "control_matmul",
                    [&](auto t) { run<element_t<decltype(t)>, kKind>(call); });
}

KernelInfo info(const char* name, void (*fn)(const KernelCall&), std::vector<int64_t> tiles) {
  KernelInfo k = cuda_kernel(name, "matmul", "tests/controls/matmul_orders.cu", fn);
  k.dtypes = {DType::bf16, DType::f16, DType::f32};
  k.tile_sizes = std::move(tiles);
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;  // slower than cuBLAS by design: a correctness control, not a candidate
  k.mutant = true;
  k.control = true;
  k.expected_catch = "control";
  return k;
}

KGATE_REGISTER_KERNEL(info("control_matmul_naive", launch<kNaive>, {16}));
KGATE_REGISTER_KERNEL(info("control_matmul_smem_tiled", launch<kSmemTiled>, {kTile32}));
KGATE_REGISTER_KERNEL(info("control_matmul_register_2d", launch<kRegister2d>,
                           {kDepth2d, kBlock2d}));
KGATE_REGISTER_KERNEL(info("control_matmul_k_interleaved", launch<kKInterleaved>, {4, kTile16}));
// 2048: the K at which S reaches 8 (above typical_max, so the long family walks it too).
KGATE_REGISTER_KERNEL(info("control_matmul_split_k", launch<kSplitK>, {kTile16, 256, 2048}));

}  // namespace
}  // namespace kgate::controls
