// The CUDA side of the test custom-op library: launches the device code of kernels/fused_add_rms_norm
// (torch-free, so nvcc never sees torch's headers).
#include <cuda_runtime.h>

#include <cstdint>

#include "fused_add_rms_norm_rows.cuh"

void kgate_test_launch_fused_add_rms_norm(int dtype, const void* x, void* residual, const void* weight, void* y,
                                          int64_t rows, int64_t n, float eps, int64_t x_row, int64_t r_row,
                                          int64_t y_row, cudaStream_t stream) {
  if (rows == 0 || n == 0) return;
  const dim3 grid(static_cast<unsigned>(rows)), block(256);
  switch (dtype) {
    case 0:
      kgate_device::fused_add_rms_norm_rows<float, 0><<<grid, block, 0, stream>>>(
          static_cast<const float*>(x), static_cast<const float*>(residual), static_cast<const float*>(weight),
          static_cast<float*>(y), static_cast<float*>(residual), n, eps, x_row, r_row, y_row, r_row);
      break;
    case 1:
      kgate_device::fused_add_rms_norm_rows<__half, 0><<<grid, block, 0, stream>>>(
          static_cast<const __half*>(x), static_cast<const __half*>(residual), static_cast<const __half*>(weight),
          static_cast<__half*>(y), static_cast<__half*>(residual), n, eps, x_row, r_row, y_row, r_row);
      break;
    default:
      kgate_device::fused_add_rms_norm_rows<__nv_bfloat16, 0><<<grid, block, 0, stream>>>(
          static_cast<const __nv_bfloat16*>(x), static_cast<const __nv_bfloat16*>(residual),
          static_cast<const __nv_bfloat16*>(weight), static_cast<__nv_bfloat16*>(y),
          static_cast<__nv_bfloat16*>(residual), n, eps, x_row, r_row, y_row, r_row);
  }
}

namespace {

// Reads a 4-byte word one byte past an aligned address: the GPU faults with "misaligned address".
__global__ void misaligned_read(unsigned char* p) {
  const int v = *reinterpret_cast<const volatile int*>(p + 1);
  if (v == 0x5a5a5a5a) p[0] = 0;  // keeps the load
}

}  // namespace

void kgate_test_launch_misaligned_read(void* p, cudaStream_t stream) {
  misaligned_read<<<1, 1, 0, stream>>>(static_cast<unsigned char*>(p));
}
