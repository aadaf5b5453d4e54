// A row softmax written as kernels that read their own memory are: y = beta * y + softmax(x) with
// beta 0 (BLAS's C = alpha*A@B + beta*C reads C whatever beta is), and a running maximum kept in a
// workspace that must start at -inf (a row whose workspace held anything else is written as NaN,
// so that a start value kgate did not honour shows). `inv_sqrt_n` comes from a float expression of
// the manifest, "1 / sqrt(N)": a row is NaN unless it arrived as 1/sqrt(n) rounded to float. One
// 256-thread block per row.
namespace {

__device__ float minus_inf() { return __int_as_float(0xff800000); }

__device__ float block_reduce(float v, bool max) {
  __shared__ float partial[32];
  for (int o = 16; o > 0; o /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = max ? fmaxf(v, other) : v + other;
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / 32;
  v = lane < warps ? partial[lane] : (max ? minus_inf() : 0.f);
  for (int o = 16; o > 0; o /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = max ? fmaxf(v, other) : v + other;
  }
  __syncthreads();  // partial is reused by the next reduction
  return v;
}

}  // namespace

extern "C" __global__ void softmax_reads_output(const float* x, float* y, float* running_max,
                                                long long n, float beta, float inv_sqrt_n) {
  const long long row = blockIdx.x;
  const float* in = x + row * n;
  float* out = y + row * n;
  const float start = running_max[row];
  float m = start;
  for (long long i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, in[i]);
  m = block_reduce(m, true);
  float sum = 0.f;
  for (long long i = threadIdx.x; i < n; i += blockDim.x) sum += expf(in[i] - m);
  sum = block_reduce(sum, false);
  const bool fresh = start == minus_inf() && inv_sqrt_n == (float)(1.0 / sqrt((double)n));
  for (long long i = threadIdx.x; i < n; i += blockDim.x)
    out[i] = beta * out[i] + (fresh ? expf(in[i] - m) / sum : __int_as_float(0x7fc00000));
  if (threadIdx.x == 0) running_max[row] = m;
}
