// The mutants of matmul_tiled, whose right version is its package (package/, compiled into the
// build by kgate_add_kernel PACKAGE); this launcher is theirs alone. The kernel: the op of
// matmul.op.json for bf16, f16 and f32 a and b of any shapes and strides. The device code is
// package/matmul_tiled.cuh, shared with the package matmul_tiled_pkg: 64 x 64 output tiles, 16-deep
// slices of K in shared memory as float, float32 accumulation. A correctness twin, not a deployment
// candidate: cuBLAS, which eager calls, is several times faster (tensor cores), so it is not timed.
// This source registers two mutants:
//   mutant_matmul_k_tail_dropped  the last K % 16 products never added (ragged K)
//   mutant_matmul_storage_accum   accumulation rounded to the storage dtype after every slice
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/gemm/package/matmul_tiled.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels {
namespace {

constexpr int kTile = kgate_device::kMatmulTile, kDepth = kgate_device::kMatmulDepth,
              kThreads = kgate_device::kMatmulThreads;

enum Variant { kCorrect = 0, kKTailDropped = 1, kStorageAccum = 2 };

template <typename T, int kVariant>
void run(const KernelCall& call) {
  const TensorView& a = call.inputs.at(0);
  const TensorView& b = call.inputs.at(1);
  const TensorView& out = call.outputs.at(0);
  const int64_t m = a.sizes[0], k = a.sizes[1], n = b.sizes[1];
  if (m == 0 || n == 0) return;
  const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile),
                  static_cast<unsigned>((m + kTile - 1) / kTile));
  if (grid.y > 65535)
    throw Error(ErrorKind::usage, "matmul_tiled: M above 65535 * 64 (the guard says so)");
  kgate_device::matmul_kernel<T, kVariant>
      <<<grid, kThreads, 0, static_cast<cudaStream_t>(call.stream)>>>(
          a.as<const T>(), b.as<const T>(), out.as<T>(), m, n, k, a.strides[0], a.strides[1],
          b.strides[0], b.strides[1], out.strides[0], out.strides[1]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

template <int kVariant>
void launch(const KernelCall& call) {
  dispatch_floating(call.inputs.at(0).dtype, "matmul_tiled",
                    [&](auto t) { run<element_t<decltype(t)>, kVariant>(call); });
}

KernelInfo info(const char* name, void (*fn)(const KernelCall&), bool mutant, const char* catches) {
  KernelInfo k;
  k.name = name;
  k.op = "matmul";
  k.backend = Backend::cuda;
  k.dtypes = {DType::bf16, DType::f16, DType::f32};
  k.tile_sizes = {kDepth, kTile};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;
  k.source = "kernels/gemm/matmul_tiled.cu";
  k.mutant = mutant;
  k.expected_catch = catches;
  k.launch = fn;
  return k;
}

KGATE_REGISTER_KERNEL(info("mutant_matmul_k_tail_dropped", launch<kKTailDropped>, true, "ragged"));
KGATE_REGISTER_KERNEL(info("mutant_matmul_storage_accum", launch<kStorageAccum>, true, "random"));

}  // namespace
}  // namespace kgate::kernels
