// NVRTC entry of package softmax_varlen_block_pkg. The device code is softmax_varlen_members.cuh,
// the file the in-tree kernel kernels/softmax_varlen/softmax_varlen_block.cu compiles too.
#include "softmax_varlen_members.cuh"
