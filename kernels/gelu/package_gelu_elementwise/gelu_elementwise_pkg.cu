// NVRTC entry of package gelu_elementwise_pkg. The device code is gelu_kernels.cuh, the file the
// in-tree kernels gelu_elementwise and gelu_tanh_elementwise compile too.
#include "gelu_kernels.cuh"
