// NVRTC entry of package group_norm_block_pkg. The device code is group_norm_groups.cuh, the file
// the in-tree kernel group_norm_block (kgate_add_kernel PACKAGE) compiles too.
#include "group_norm_groups.cuh"
