// Controls on the op of kernels/gemm/package/matmul.op.json: five correct GEMMs whose K sums run in
// orders other than eager's (cuBLAS), compiled with nvcc. Their device code and its orders are in
// device/matmul_orders.cuh, which packages/ also compile with NVRTC. Each must pass every family
// under kgate's defaults.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "core/error.hpp"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"
#include "tests/controls/device/matmul_orders.cuh"

namespace kgate::controls {
namespace {

using namespace kgate_controls;

/// Sizes and strides (elements) of one call: a:[M,K], b:[K,N], out:[M,N].
struct Gemm {
  int64_t m, n, k;
  int64_t a_row, a_col, b_row, b_col, o_row, o_col;
};
#define KGATE_GEMM_ARGS g.m, g.n, g.k, g.a_row, g.a_col, g.b_row, g.b_col, g.o_row, g.o_col

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
  matmul_split_k_partial<T>
      <<<grid, dim3(kTile16, kTile16), 0, stream>>>(a, b, ws, KGATE_GEMM_ARGS, chunk);
  const cudaError_t launched = cudaGetLastError();
  if (launched == cudaSuccess)
    matmul_split_k_reduce<T><<<blocks_of(g.m * g.n, 256), 256, 0, stream>>>(
        ws, out, g.m, g.n, g.o_row, g.o_col, static_cast<int>(splits));
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
          ap, bp, op, KGATE_GEMM_ARGS);
      break;
    case kSmemTiled:
      matmul_smem_tiled<T><<<dim3(blocks_of(g.n, kTile32), blocks_of(g.m, kTile32)),
                             dim3(kTile32, kTile32), 0, stream>>>(ap, bp, op, KGATE_GEMM_ARGS);
      break;
    case kRegister2d:
      matmul_register_2d<T>
          <<<dim3(blocks_of(g.n, kBlock2d), blocks_of(g.m, kBlock2d)), kThreads2d, 0, stream>>>(
              ap, bp, op, KGATE_GEMM_ARGS);
      break;
    case kKInterleaved:
      matmul_k_interleaved<T><<<dim3(blocks_of(g.n, kTile16), blocks_of(g.m, kTile16)),
                                dim3(kTile16, kTile16), 0, stream>>>(ap, bp, op, KGATE_GEMM_ARGS);
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
