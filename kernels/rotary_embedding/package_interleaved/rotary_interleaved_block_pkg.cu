// NVRTC entry of package rotary_interleaved_block_pkg: the device code the in-tree
// rotary_interleaved_block compiles.
#include "rotary_rows.cuh"
