// NVRTC entry of package adaptive_avg_pool2d_direct_pkg. The device code is
// adaptive_avg_pool2d_cells.cuh, the file the in-tree kernel
// kernels/adaptive_avg_pool2d/adaptive_avg_pool2d_direct.cu compiles too.
#include "adaptive_avg_pool2d_cells.cuh"
