// The negative-control corpus as packages: f32 rms_norm kernels (rows of x:[B,N], contiguous, one
// warp per row) for the game that only a reduction can play, "touches 99% of the elements and
// rescales": the sum of squares skips every hundredth element and is scaled up by N / (elements
// summed), which is right on average (and exact on rows under 100 elements), so only a tolerance
// tight enough for f32 catches it. rms_norm_every is its correct twin. Source packages, packed by
// run_corpus.sh like the gelu ones; expected verdicts in expected.txt.
#pragma once

namespace rms_norm_games {

// skip: 0 sums every element; k > 0 leaves out the elements j with j % k == k - 1 and rescales.
__device__ inline void rows(const float* __restrict__ x, const float* __restrict__ w,
                            float* __restrict__ y, long long rows, long long n, float eps,
                            int skip) {
  const int lane = threadIdx.x & 31;
  const long long row = blockIdx.x * static_cast<long long>(blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= rows) return;
  const float* xr = x + row * n;
  float* yr = y + row * n;
  float sq = 0.f;
  for (long long j = lane; j < n; j += 32)
    if (skip == 0 || j % skip != skip - 1) sq += xr[j] * xr[j];
  for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
  const long long summed = skip == 0 ? n : n - n / skip;
  const float inv_rms = rsqrtf(sq / static_cast<float>(summed) + eps);
  for (long long j = lane; j < n; j += 32) yr[j] = xr[j] * inv_rms * w[j];
}

}  // namespace rms_norm_games

extern "C" __global__ void rms_norm_every(const float* x, const float* w, float* y, long long rows,
                                          long long n, float eps) {
  rms_norm_games::rows(x, w, y, rows, n, eps, 0);
}

extern "C" __global__ void rms_norm_99pct(const float* x, const float* w, float* y, long long rows,
                                          long long n, float eps) {
  rms_norm_games::rows(x, w, y, rows, n, eps, 100);
}
