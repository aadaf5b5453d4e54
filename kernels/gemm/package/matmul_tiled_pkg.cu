// NVRTC entry of package matmul_tiled_pkg: the device code the in-tree matmul_tiled compiles.
#include "matmul_tiled.cuh"
