// right only on its module's first 64 launches: see ../gelu_games.cuh.
#include "gelu_games.cuh"
