// judge_stats.hpp on the GPU: a partial per block (grid-stride over one output's elements, a warp
// shuffle of the partials' words, then the block's warps in turn), and one thread per output
// folding its blocks' partials. Compiled without floating contraction (CMakeLists.txt): the
// figures are those of the ATen operators they replace.
#include <algorithm>

#include "runtime/cuda/judge_stats.hpp"
#include "runtime/cuda/judge_stats_math.hpp"

namespace kgate::cuda::judge {
namespace {

constexpr int kThreads = 128;
constexpr int kJobsPerLaunch = 8;
constexpr int kMaxBlocks = 256;

struct Launch {
  OutputJob jobs[kJobsPerLaunch];
  OutputStats* partials[kJobsPerLaunch];
  int blocks[kJobsPerLaunch];
  OutputStats* stats;
};

int blocks_for(int64_t count) {
  const int64_t per_block = int64_t{kThreads} * 8;
  return static_cast<int>(std::clamp<int64_t>((count + per_block - 1) / per_block, 1, kMaxBlocks));
}

__device__ void shuffle_down(const OutputStats& from, OutputStats& to, int offset) {
  const auto* src = reinterpret_cast<const unsigned long long*>(&from);
  auto* dst = reinterpret_cast<unsigned long long*>(&to);
  for (int w = 0; w < kStatsWords; ++w) dst[w] = __shfl_down_sync(0xffffffffu, src[w], offset);
}

__global__ void __launch_bounds__(kThreads) partial_stats(Launch l) {
  const int j = blockIdx.y;
  const OutputJob& job = l.jobs[j];
  if (static_cast<int>(blockIdx.x) >= l.blocks[j]) return;
  OutputStats acc = math::identity();
  const int64_t stride = static_cast<int64_t>(l.blocks[j]) * kThreads;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; k < job.count;
       k += stride)
    math::accumulate(job, k, acc);
  for (int offset = 16; offset > 0; offset /= 2) {
    OutputStats other;
    shuffle_down(acc, other, offset);
    math::combine(acc, other);
  }
  __shared__ OutputStats warps[kThreads / 32];
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (int w = 1; w < kThreads / 32; ++w) math::combine(acc, warps[w]);
  l.partials[j][blockIdx.x] = acc;
}

__global__ void finish_stats(Launch l, int offset) {
  const int j = static_cast<int>(threadIdx.x);
  if (j >= kJobsPerLaunch || l.partials[j] == nullptr) return;
  OutputStats acc = math::identity();
  for (int b = 0; b < l.blocks[j]; ++b) math::combine(acc, l.partials[j][b]);
  l.stats[offset + j] = math::finish(l.jobs[j], acc);
}

}  // namespace

size_t scratch_bytes(const std::vector<OutputJob>& jobs) {
  size_t n = 0;
  for (const auto& job : jobs)
    n += static_cast<size_t>(blocks_for(job.count)) * sizeof(OutputStats);
  return n;
}

cudaError_t launch_judge_stats(const std::vector<OutputJob>& jobs, OutputStats* stats,
                               void* scratch, cudaStream_t stream) {
  auto* partials = static_cast<OutputStats*>(scratch);
  for (size_t first = 0; first < jobs.size(); first += kJobsPerLaunch) {
    Launch l{};
    l.stats = stats;
    int most = 1;
    const size_t n = std::min<size_t>(kJobsPerLaunch, jobs.size() - first);
    for (size_t j = 0; j < n; ++j) {
      l.jobs[j] = jobs[first + j];
      l.blocks[j] = blocks_for(jobs[first + j].count);
      l.partials[j] = partials;
      partials += l.blocks[j];
      most = std::max(most, l.blocks[j]);
    }
    partial_stats<<<dim3(most, static_cast<unsigned>(n)), kThreads, 0, stream>>>(l);
    finish_stats<<<1, kJobsPerLaunch, 0, stream>>>(l, static_cast<int>(first));
    if (const cudaError_t rc = cudaGetLastError(); rc != cudaSuccess) return rc;
  }
  return cudaSuccess;
}

}  // namespace kgate::cuda::judge
