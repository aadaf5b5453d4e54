// A module whose every symbol is in an anonymous namespace, as a kernel registered from its own
// source is (examples/consumer/l2_normalize_warp.cu): with no external symbol to name the namespace
// after, nvcc ends its name with "_<8 hex>_<digits>" that change with every compile
// (tests/cuda/module_digest_test.cpp builds this object in two directories; -DCHANGE changes the
// kernel's code).
#include <cuda_runtime.h>

namespace {

__global__ void scale(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef CHANGE
  if (i < n) x[i] *= 3.0f;
#else
  if (i < n) x[i] *= 2.0f;
#endif
}

struct Registration {
  Registration() {
    float* x = nullptr;
    if (cudaMalloc(&x, 4) == cudaSuccess) scale<<<1, 1>>>(x, 1);
  }
} registration;

}  // namespace
