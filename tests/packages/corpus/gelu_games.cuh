// The negative-control corpus as packages (tests/packages/corpus/*/): f32 exact GELU kernels that
// game the gate the ways tests/mutants/gelu_games.cu does in-tree, each in a package of its own
// whose kgate.json names one of these kernels, and the verdict each must get in
// tests/packages/corpus/expected.txt. The packages are source packages (this header is outside
// them): `kgate pack` makes each self-contained (tests/packages/corpus/run_corpus.sh).
#pragma once

namespace gelu_games {

__device__ inline float gelu(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

// Rounds to bf16 (nearest even) and back, without the bf16 header.
__device__ inline float round_bf16(float v) {
  unsigned u = __float_as_uint(v);
  u += 0x7fffu + ((u >> 16) & 1u);
  return __uint_as_float(u & 0xffff0000u);
}

}  // namespace gelu_games

#define GELU_GAMES_LOOP(i)                                                                 \
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n; \
       i += static_cast<long long>(gridDim.x) * blockDim.x)

extern "C" __global__ void gelu_correct(const float* __restrict__ x, float* __restrict__ y,
                                        long long n) {
  GELU_GAMES_LOOP(i) y[i] = gelu_games::gelu(x[i]);
}

extern "C" __global__ void gelu_zeros(const float* __restrict__ x, float* __restrict__ y,
                                      long long n) {
  (void)x;
  GELU_GAMES_LOOP(i) y[i] = 0.0f;
}

extern "C" __global__ void gelu_returns_input(const float* __restrict__ x, float* __restrict__ y,
                                              long long n) {
  GELU_GAMES_LOOP(i) y[i] = x[i];
}

extern "C" __global__ void gelu_bf16_inside(const float* __restrict__ x, float* __restrict__ y,
                                            long long n) {
  GELU_GAMES_LOOP(i) y[i] = gelu_games::round_bf16(gelu_games::gelu(gelu_games::round_bf16(x[i])));
}

// Every 100th element gets the cheap 0.5 x.
extern "C" __global__ void gelu_approx_1pct(const float* __restrict__ x, float* __restrict__ y,
                                            long long n) {
  GELU_GAMES_LOOP(i) y[i] = i % 100 == 99 ? 0.5f * x[i] : gelu_games::gelu(x[i]);
}

// Writes only where the output holds a NaN (kgate's poison), skipping outputs that look written.
extern "C" __global__ void gelu_spots_poison(const float* __restrict__ x, float* y, long long n) {
  GELU_GAMES_LOOP(i) {
    const float held = y[i];
    if (held != held) y[i] = gelu_games::gelu(x[i]);
  }
}

// Computes the first `limit` elements only (the timed-shapes package launches it on the timed
// shape).
extern "C" __global__ void gelu_first_part(const float* __restrict__ x, float* __restrict__ y,
                                           long long n, long long limit) {
  GELU_GAMES_LOOP(i) if (i < limit) y[i] = gelu_games::gelu(x[i]);
}

// Right on the module's first 64 launches, zeros after.
__device__ unsigned long long gelu_games_calls;
extern "C" __global__ void gelu_first_calls(const float* __restrict__ x, float* __restrict__ y,
                                            long long n) {
  const unsigned long long calls = *static_cast<volatile unsigned long long*>(&gelu_games_calls);
  __syncthreads();
  if (blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(&gelu_games_calls, 1ull);
  GELU_GAMES_LOOP(i) y[i] = calls > 64 ? 0.0f : gelu_games::gelu(x[i]);
}

// A block whose first load misses the L2 (as after kgate's flush, before timed launches) writes
// zeros.
extern "C" __global__ void gelu_after_flush(const float* __restrict__ x, float* __restrict__ y,
                                            long long n) {
  __shared__ int cold;
  if (threadIdx.x == 0) {
    const long long first = blockIdx.x * static_cast<long long>(blockDim.x);
    const float* p = x + (first < n ? first : 0);
    const long long t0 = clock64();
    const float v = __ldcg(p);
    const long long t1 = clock64();
    cold = (t1 - t0 > 600 && v == v) ? 1 : 0;
  }
  __syncthreads();
  GELU_GAMES_LOOP(i) y[i] = cold ? 0.0f : gelu_games::gelu(x[i]);
}

// Keeps the last 8 (x, y) pointer pairs it was called with, and does nothing for a pair it has
// seen.
__device__ const float* gelu_games_seen_x[8];
__device__ float* gelu_games_seen_y[8];
__device__ unsigned gelu_games_seen;
extern "C" __global__ void gelu_by_pointer(const float* __restrict__ x, float* __restrict__ y,
                                           long long n) {
  __shared__ int hit;
  if (threadIdx.x == 0) {
    hit = 0;
    const unsigned k = gelu_games_seen < 8u ? gelu_games_seen : 8u;
    for (unsigned j = 0; j < k; ++j)
      if (gelu_games_seen_x[j] == x && gelu_games_seen_y[j] == y) hit = 1;
  }
  __syncthreads();
  if (hit) return;
  GELU_GAMES_LOOP(i) y[i] = gelu_games::gelu(x[i]);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const unsigned j = atomicAdd(&gelu_games_seen, 1u) % 8u;
    gelu_games_seen_x[j] = x;
    gelu_games_seen_y[j] = y;
  }
}
