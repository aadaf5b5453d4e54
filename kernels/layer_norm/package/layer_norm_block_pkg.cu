// NVRTC entry of package layer_norm_block_pkg. The device code is layer_norm_rows.cuh, the file the
// in-tree kernel kernels/layer_norm/layer_norm_block.cu compiles too.
#include "layer_norm_rows.cuh"
