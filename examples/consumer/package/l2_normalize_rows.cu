// The source of package l2_normalize_rows: its device code (l2_normalize_rows.cuh).
// kgate_add_kernel (PACKAGE) compiles it with nvcc into this project's kernels; `kgate check
// --package` with NVRTC.
#include "l2_normalize_rows.cuh"
