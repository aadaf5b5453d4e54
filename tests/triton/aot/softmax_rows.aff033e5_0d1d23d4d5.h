#ifndef TT_KERNEL_INCLUDES
#define TT_KERNEL_INCLUDES

#include <cuda.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#endif

void unload_softmax_rows_aff033e5_0d1d23d4d5(void);
void load_softmax_rows_aff033e5_0d1d23d4d5(void);
// tt-linker: softmax_rows_aff033e5_0d1d23d4d5:CUdeviceptr x_ptr, CUdeviceptr y_ptr, int32_t n_cols, int32_t x_row_stride, int32_t y_row_stride:1024_warps4xstages3
CUresult softmax_rows_aff033e5_0d1d23d4d5(CUstream stream, CUdeviceptr x_ptr, CUdeviceptr y_ptr, int32_t n_cols, int32_t x_row_stride, int32_t y_row_stride);
