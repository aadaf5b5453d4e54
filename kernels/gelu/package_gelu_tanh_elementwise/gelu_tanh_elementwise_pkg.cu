// NVRTC entry of package gelu_tanh_elementwise_pkg. The device code is gelu_kernels.cuh, a copy of
// kernels/gelu/package_gelu_elementwise/gelu_kernels.cuh (the file the in-tree kernels compile).
#include "gelu_kernels.cuh"
