// half the work on the timed shapes (4M elements): see ../gelu_games.cuh.
#include "gelu_games.cuh"
