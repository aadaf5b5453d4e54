// NVRTC entry of package rms_norm_block_pkg. The device code is rms_norm_rows.cuh, the file the
// in-tree kernel kernels/rms_norm/rms_norm_block.cu compiles too.
#include "rms_norm_rows.cuh"
