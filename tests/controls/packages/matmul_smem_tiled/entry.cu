// NVRTC entry of package control_matmul_smem_tiled_pkg.
#include "matmul_orders.cuh"
