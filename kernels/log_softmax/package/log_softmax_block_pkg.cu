// NVRTC entry of package log_softmax_block_pkg. The device code is log_softmax_rows.cuh, the file
// the in-tree kernel log_softmax_block (kgate_add_kernel PACKAGE) compiles too.
#include "log_softmax_rows.cuh"
