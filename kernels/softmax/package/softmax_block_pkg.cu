// NVRTC entry of package softmax_block_pkg. The device code is softmax_rows.cuh, the file the
// in-tree kernel kernels/softmax/softmax_block.cu compiles too.
#include "softmax_rows.cuh"
