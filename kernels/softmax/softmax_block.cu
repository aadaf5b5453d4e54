// softmax_block: row softmax over x:[B,N] for f32, f16 and bf16, any N.
//   N <= 1024:   one warp per row, the row held in registers (one read, one write);
//   N <= 16384:  one 1024-thread block per row, the row held in registers;
//   N <= 48K:    one 1024-thread block per row, the row staged in shared memory (one read, one
//                write; 16-byte vector accesses when rows are 16-byte aligned);
//   larger N:    one block per row, online max/sum pass then a write pass (two reads).
// Accumulation is in float. Rows may start anywhere (no alignment assumption); the last dim must be
// contiguous. The device code lives in package/softmax_rows.cuh, shared with the package
// softmax_block_pkg (package/kgate.json describes this dispatch), so checking the package checks
// this kernel's device code.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/softmax/package/softmax_rows.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels {
namespace {

constexpr int kWarpRowsPerBlock = kgate_device::kSoftmaxWarpRowsPerBlock;
constexpr int kBigBlock = kgate_device::kSoftmaxBlock;
constexpr int kSmemRowMax = 48 * 1024;  // floats of dynamic shared memory per row (192 KiB)

template <typename T, int kElems>
void launch_warp(const T* x, T* y, int64_t rows, int n, int64_t xs, int64_t ys,
                 cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>((rows + kWarpRowsPerBlock - 1) / kWarpRowsPerBlock);
  kgate_device::softmax_warp_rows<T, kElems>
      <<<blocks, 32 * kWarpRowsPerBlock, 0, stream>>>(x, y, rows, n, xs, ys);
}

template <typename T, int kElems>
void launch_block(const T* x, T* y, int64_t rows, int n, int64_t xs, int64_t ys,
                  cudaStream_t stream) {
  kgate_device::softmax_block_rows<T, kElems>
      <<<static_cast<unsigned>(rows), kBigBlock, 0, stream>>>(x, y, n, xs, ys);
}

template <typename T, bool kVec>
void launch_smem(const T* x, T* y, int64_t rows, int n, int64_t xs, int64_t ys,
                 cudaStream_t stream) {
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  KGATE_CUDA_CALL(cudaFuncSetAttribute(kgate_device::softmax_smem_rows<T, kVec>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(bytes)));
  kgate_device::softmax_smem_rows<T, kVec>
      <<<static_cast<unsigned>(rows), kBigBlock, bytes, stream>>>(x, y, n, xs, ys);
}

// 16-byte vector access is possible when both rows start 16-byte aligned and N fills whole vectors.
template <typename T>
bool vector_ok(const void* x, const void* y, int64_t n, int64_t xs, int64_t ys) {
  constexpr int64_t v = 16 / sizeof(T);
  return reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0 &&
         n % v == 0 && xs % v == 0 && ys % v == 0;
}

template <typename T>
void run(const KernelCall& call) {
  const TensorView& xv = call.inputs.at(0);
  const TensorView& yv = call.outputs.at(0);
  if (xv.dim() != 2 || yv.dim() != 2)
    throw Error(ErrorKind::usage, "softmax_block: expects x:[B,N] and y:[B,N] (rank 2)");
  const int64_t rows = xv.sizes[0], n = xv.sizes[1];
  if (rows == 0 || n == 0) return;
  if ((n > 1 && (xv.strides[1] != 1 || yv.strides[1] != 1)))
    throw Error(ErrorKind::usage,
                "softmax_block: the last dim of x and y must be contiguous (stride 1)");
  if (rows > 2147483647LL) throw Error(ErrorKind::usage, "softmax_block: more than 2^31-1 rows");
  const T* x = xv.as<const T>();
  T* y = yv.as<T>();
  const int64_t xs = xv.strides[0], ys = yv.strides[0];
  auto stream = static_cast<cudaStream_t>(call.stream);
  if (n <= 32) launch_warp<T, 1>(x, y, rows, static_cast<int>(n), xs, ys, stream);
  else if (n <= 64) launch_warp<T, 2>(x, y, rows, static_cast<int>(n), xs, ys, stream);
  else if (n <= 128) launch_warp<T, 4>(x, y, rows, static_cast<int>(n), xs, ys, stream);
  else if (n <= 256) launch_warp<T, 8>(x, y, rows, static_cast<int>(n), xs, ys, stream);
  else if (n <= 512) launch_warp<T, 16>(x, y, rows, static_cast<int>(n), xs, ys, stream);
  else if (n <= 1024) launch_warp<T, 32>(x, y, rows, static_cast<int>(n), xs, ys, stream);
  else if (n <= 2048) launch_block<T, 2>(x, y, rows, static_cast<int>(n), xs, ys, stream);
  else if (n <= 4096) launch_block<T, 4>(x, y, rows, static_cast<int>(n), xs, ys, stream);
  else if (n <= 8192) launch_block<T, 8>(x, y, rows, static_cast<int>(n), xs, ys, stream);
  else if (n <= 16384) launch_block<T, 16>(x, y, rows, static_cast<int>(n), xs, ys, stream);
  else if (n <= kSmemRowMax && vector_ok<T>(x, y, n, xs, ys))
    launch_smem<T, true>(x, y, rows, static_cast<int>(n), xs, ys, stream);
  else if (n <= kSmemRowMax) launch_smem<T, false>(x, y, rows, static_cast<int>(n), xs, ys, stream);
  else
    kgate_device::softmax_long_rows<T>
        <<<static_cast<unsigned>(rows), kBigBlock, 0, stream>>>(x, y, n, xs, ys);
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch(const KernelCall& call) {
  dispatch_floating(call.inputs.at(0).dtype, "softmax_block",
                    [&](auto t) { run<element_t<decltype(t)>>(call); });
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k =
      cuda_kernel("softmax_block", "softmax", "kernels/softmax/softmax_block.cu", launch);
  k.tile_sizes = {32, 1024, 16384, kSmemRowMax};
  k.accepts_strided = false;
  k.accepts_unaligned = true;
  return k;
})());

}  // namespace
}  // namespace kgate::kernels
