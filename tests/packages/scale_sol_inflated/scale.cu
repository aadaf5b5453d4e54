// y = 2 x, f32, one element per thread: a correct, plain streaming kernel for an op whose declared
// speed-of-light floor (scale_inflated.op.json's min_bytes) claims 64 times the bytes it moves. In
// cold-cache timing both arms then look faster than the hardware allows: the comparison must be
// INVALID, never a PASS (tests/packages/sol_inflated_gpu.sh).
extern "C" __global__ void scale2(const float* __restrict__ x, float* __restrict__ y, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    y[i] = 2.0f * x[i];
}
