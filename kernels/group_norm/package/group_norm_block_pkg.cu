// NVRTC entry of package group_norm_block_pkg. The device code is group_norm_groups.cuh, the file
// the in-tree kernel kernels/group_norm/group_norm_block.cu compiles too.
#include "group_norm_groups.cuh"
