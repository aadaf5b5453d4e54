// The correct twin of samples_99pct (every element summed): see ../rms_norm_games.cuh.
#include "rms_norm_games.cuh"
