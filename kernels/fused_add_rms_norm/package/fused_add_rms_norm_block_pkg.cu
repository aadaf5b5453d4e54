// NVRTC entry of package fused_add_rms_norm_block_pkg. The device code is
// fused_add_rms_norm_rows.cuh, the file the in-tree kernel fused_add_rms_norm_block (this package,
// kgate_add_kernel PACKAGE) compiles too.
#include "fused_add_rms_norm_rows.cuh"
