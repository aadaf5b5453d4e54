// NVRTC entry of package log_softmax_block_pkg. The device code is log_softmax_rows.cuh, the file
// the in-tree kernel kernels/log_softmax/log_softmax_block.cu compiles too.
#include "log_softmax_rows.cuh"
