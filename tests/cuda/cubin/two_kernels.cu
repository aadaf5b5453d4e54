// Fixture of tests/cuda/cubin_digest_test.cpp, compiled to CUBINs in variants
// (tests/CMakeLists.txt): a kernel with a non-inlined callee and a constant table, and a kernel
// with shared memory.
#ifndef TABLE3
#define TABLE3 0.0f
#endif
__constant__ float table[16] = {0, 0, 0, TABLE3};

#ifdef HELPER_CHANGE
__device__ __noinline__ float helper(float x) { return x * table[3] + 2.0f; }
#else
__device__ __noinline__ float helper(float x) { return x * table[3] + 1.0f; }
#endif

__global__ void with_callee(float* o, const float* in, int n) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) o[t] = helper(in[t]);
}

__global__ void with_shared(float* o, int n) {
  __shared__ float s[64];
  s[threadIdx.x % 64] = static_cast<float>(n);
  __syncthreads();
  o[threadIdx.x] = s[(threadIdx.x + 1) % 64];
}

#ifdef EXTRA_KERNEL
template <typename T>
__global__ void extra(T* o) {
  o[0] = T(1);
}
template __global__ void extra<float>(float*);
#endif
