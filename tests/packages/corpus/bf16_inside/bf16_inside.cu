// computes in bf16 inside an f32 kernel: see ../gelu_games.cuh.
#include "gelu_games.cuh"
