// Mutants on the op of kernels/gemm/package/matmul.op.json, f32 only: GEMMs that accumulate in
// float32 (16 x 16 tiles in shared memory, K summed 0..K-1 with fmaf, any strides) but round the
// inputs to a narrower format before the multiply, as reduced-precision tensor-core paths do:
//   mutant_matmul_bf16_inputs  a and b rounded to bfloat16 (8 significant bits, nearest-even):
//                              each product off by up to 2^-8 relative
//   mutant_matmul_tf32         a and b rounded to TF32 (11 significant bits, cvt.rna.tf32.f32:
//                              nearest, ties away): each product off by up to 2^-11 relative
// The error grows as sqrt(K) times a product's rounding, far above what a float32 sum in any
// order loses (the conditioned rule's allowance), on random cases of any K. Correct twin:
// kernels/gemm/matmul_tiled.cu.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/common/kgate_device.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::mutants {
namespace {

using kgate_device::i64;

enum Rounding { kBf16, kTf32 };

template <int kRounding>
__device__ __forceinline__ float round_input(float v) {
  if (kRounding == kBf16) return __bfloat162float(__float2bfloat16_rn(v));  // BUG: 8 bits kept
  unsigned t;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(t) : "f"(v));  // BUG: 11 bits kept
  return __uint_as_float(t);
}

constexpr int kTile = 16;

template <int kRounding>
__global__ void matmul_rounded_inputs(const float* a, const float* b, float* out, i64 m, i64 n,
                                      i64 k, i64 a_row, i64 a_col, i64 b_row, i64 b_col, i64 o_row,
                                      i64 o_col) {
  __shared__ float as[kTile][kTile + 1];
  __shared__ float bs[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const i64 r = static_cast<i64>(blockIdx.y) * kTile + ty;
  const i64 c = static_cast<i64>(blockIdx.x) * kTile + tx;
  float acc = 0.f;
  for (i64 k0 = 0; k0 < k; k0 += kTile) {
    as[ty][tx] =
        r < m && k0 + tx < k ? round_input<kRounding>(a[r * a_row + (k0 + tx) * a_col]) : 0.f;
    bs[ty][tx] =
        k0 + ty < k && c < n ? round_input<kRounding>(b[(k0 + ty) * b_row + c * b_col]) : 0.f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTile; ++kk) acc = fmaf(as[ty][kk], bs[kk][tx], acc);
    __syncthreads();
  }
  if (r < m && c < n) out[r * o_row + c * o_col] = acc;
}

template <int kRounding>
void launch(const KernelCall& call) {
  const TensorView& a = call.inputs.at(0);
  const TensorView& b = call.inputs.at(1);
  const TensorView& out = call.outputs.at(0);
  if (a.dtype != DType::f32)
    throw Error(ErrorKind::usage, "mutant_matmul rounded inputs: only f32");
  const int64_t m = a.sizes[0], k = a.sizes[1], n = b.sizes[1];
  if (m == 0 || n == 0) return;
  const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile),
                  static_cast<unsigned>((m + kTile - 1) / kTile));
  matmul_rounded_inputs<kRounding>
      <<<grid, dim3(kTile, kTile), 0, static_cast<cudaStream_t>(call.stream)>>>(
          a.as<const float>(), b.as<const float>(), out.as<float>(), m, n, k, a.strides[0],
          a.strides[1], b.strides[0], b.strides[1], out.strides[0], out.strides[1]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

KernelInfo info(const char* name, void (*fn)(const KernelCall&)) {
  KernelInfo k;
  k.name = name;
  k.op = "matmul";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32};
  k.tile_sizes = {kTile};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;
  k.source = "tests/mutants/matmul_precision.cu";
  k.mutant = true;
  k.control = false;
  k.expected_catch = "random";
  k.launch = fn;
  return k;
}

KGATE_REGISTER_KERNEL(info("mutant_matmul_bf16_inputs", launch<kBf16>));
KGATE_REGISTER_KERNEL(info("mutant_matmul_tf32", launch<kTf32>));

}  // namespace
}  // namespace kgate::mutants
