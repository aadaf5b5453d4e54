// NVRTC entry of package control_matmul_split_k_pkg.
#include "matmul_orders.cuh"
