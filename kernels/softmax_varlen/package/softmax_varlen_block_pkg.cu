// NVRTC entry of package softmax_varlen_block_pkg. The device code is softmax_varlen_members.cuh,
// the file the in-tree kernel softmax_varlen_block (kgate_add_kernel PACKAGE) compiles too.
#include "softmax_varlen_members.cuh"
