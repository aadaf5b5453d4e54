// NVRTC entry of package adaptive_avg_pool2d_direct_pkg. The device code is
// adaptive_avg_pool2d_cells.cuh, the file the in-tree kernel
// adaptive_avg_pool2d_direct (kgate_add_kernel PACKAGE) compiles too.
#include "adaptive_avg_pool2d_cells.cuh"
