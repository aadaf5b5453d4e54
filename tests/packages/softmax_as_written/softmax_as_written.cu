#include "softmax_as_written.cuh"
