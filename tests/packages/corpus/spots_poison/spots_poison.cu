// writes only where the output holds the poison: see ../gelu_games.cuh.
#include "gelu_games.cuh"
