// NVRTC entry of package control_matmul_k_interleaved_pkg.
#include "matmul_orders.cuh"
