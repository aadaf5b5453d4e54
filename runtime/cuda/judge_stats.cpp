// judge_stats.hpp on the CPU: each output in chunks (run by the caller's parallel loop), the
// chunks' partials folded in order. Compiled without floating contraction (CMakeLists.txt).
#include <algorithm>

#include "runtime/cuda/judge_stats.hpp"
#include "runtime/cuda/judge_stats_math.hpp"

namespace kgate::cuda::judge {

void judge_stats_host(const std::vector<OutputJob>& jobs, OutputStats* stats,
                      const ParallelFor& parallel) {
  constexpr int64_t kChunk = 32768;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const OutputJob& job = jobs[j];
    const int64_t chunks = std::max<int64_t>(1, (job.count + kChunk - 1) / kChunk);
    std::vector<OutputStats> partial(static_cast<size_t>(chunks), math::identity());
    const auto run = [&](int64_t c) {
      OutputStats& s = partial[static_cast<size_t>(c)];
      for (int64_t k = c * kChunk, end = std::min(job.count, k + kChunk); k < end; ++k)
        math::accumulate(job, k, s);
    };
    if (parallel && chunks > 1) parallel(chunks, run);
    else
      for (int64_t c = 0; c < chunks; ++c) run(c);
    OutputStats acc = math::identity();
    for (const auto& p : partial) math::combine(acc, p);
    stats[j] = math::finish(job, acc);
  }
}

}  // namespace kgate::cuda::judge
