// The package's one source: the library's header, as a user's own translation unit includes it.
// Both overloads of Fill are instantiated here, so the fatbin holds two kernels of one C++ name
// (tests/precompiled/nvcc_pack.sh names it, and is told it is ambiguous).
#include "mylib/norm.cuh"

template __global__ void mylib::norm::Fill<float>(float*, int64_t);
template __global__ void mylib::norm::Fill<float>(float*, int64_t, float*);
