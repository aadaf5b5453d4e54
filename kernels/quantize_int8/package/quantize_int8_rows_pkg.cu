// NVRTC entry of package quantize_int8_rows_pkg: the device code the in-tree quantize_int8_rows
// compiles.
#include "quantize_int8_rows.cuh"
