// NVRTC entry of package layer_norm_block_pkg. The device code is layer_norm_rows.cuh, the file the
// in-tree kernel layer_norm_block (kgate_add_kernel PACKAGE) compiles too.
#include "layer_norm_rows.cuh"
