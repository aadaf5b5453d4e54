// writes zeros: see ../gelu_games.cuh.
#include "gelu_games.cuh"
