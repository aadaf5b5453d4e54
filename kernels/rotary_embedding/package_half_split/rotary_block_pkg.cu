// NVRTC entry of package rotary_block_pkg: the device code the in-tree rotary_block compiles.
#include "rotary_rows.cuh"
