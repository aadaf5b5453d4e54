// NVRTC entry of package cross_entropy_rows_pkg: the device code the in-tree cross_entropy_rows
// compiles.
#include "cross_entropy_rows.cuh"
