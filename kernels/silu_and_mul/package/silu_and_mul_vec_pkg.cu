// NVRTC entry of package silu_and_mul_vec_pkg. The device code is silu_and_mul_rows.cuh, the file
// the in-tree kernel kernels/silu_and_mul/silu_and_mul_vec.cu compiles too.
#include "silu_and_mul_rows.cuh"
