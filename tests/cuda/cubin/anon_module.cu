// A module's kernels as CUDA projects write them: one in an anonymous namespace, one static, one
// external, launched from host code (tests/cuda/module_digest_test.cpp builds this object in two
// directories, with and without line information; -DCHANGE changes one kernel's code).
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
}  // namespace

static __global__ void shift(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

__global__ void square(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= x[i];
}

void launch_all(float* x, int n, cudaStream_t stream) {
  const int blocks = (n + 255) / 256;
  scale<<<blocks, 256, 0, stream>>>(x, n);
  shift<<<blocks, 256, 0, stream>>>(x, n);
  square<<<blocks, 256, 0, stream>>>(x, n);
}
