// NVRTC entry of package embedding_gather_pkg. The device code is embedding_rows.cuh, the file the
// in-tree kernel embedding_gather (kgate_add_kernel PACKAGE) compiles too.
#include "embedding_rows.cuh"
