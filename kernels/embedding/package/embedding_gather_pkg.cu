// NVRTC entry of package embedding_gather_pkg. The device code is embedding_rows.cuh, the file the
// in-tree kernel kernels/embedding/embedding_gather.cu compiles too.
#include "embedding_rows.cuh"
