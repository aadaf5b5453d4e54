// NVRTC entry of package topk_rows_pkg: the device code the in-tree topk_rows compiles.
#include "topk_rows.cuh"
