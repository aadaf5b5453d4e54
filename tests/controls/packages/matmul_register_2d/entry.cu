// NVRTC entry of package control_matmul_register_2d_pkg.
#include "matmul_orders.cuh"
