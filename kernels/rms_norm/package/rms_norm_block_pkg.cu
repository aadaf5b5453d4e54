// NVRTC entry of package rms_norm_block_pkg, and the source nvcc compiles for the in-tree kernel
// rms_norm_block (kgate_add_kernel PACKAGE). The device code is rms_norm_rows.cuh.
#include "rms_norm_rows.cuh"
