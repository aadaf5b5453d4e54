// a block whose first load misses the L2 writes zeros: see ../gelu_games.cuh.
#include "gelu_games.cuh"
