// Touches 99% of the elements and rescales: see ../rms_norm_games.cuh.
#include "rms_norm_games.cuh"
