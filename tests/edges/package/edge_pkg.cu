// NVRTC entry of the tile-edge mutant packages (kgate.json.in): the device code is
// edge_rms_norm.cuh, copied beside it with kgate_device.cuh when a package is made.
#include "edge_rms_norm.cuh"
