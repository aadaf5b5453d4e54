// The Google Benchmark target of one kernel (kgate_add_kernel links it with the kernel's name):
// one benchmark per speed shape, manual time = device time per launch (CUPTI; chrono on cpu).
// Run with --benchmark_repetitions=N --benchmark_enable_random_interleaving=true; its JSON output
// (--benchmark_out=F --benchmark_out_format=json) goes into the report with `kgate check
// --benchmark-json F`, but the speed gate's statistics do not depend on it.
// Exits 77 (SKIPPED, as CTest counts it) without a GPU for a cuda kernel, and for a correctness
// twin, which kgate does not time either.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

#include "references/catalogue.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/pipeline.hpp"

// Compiled once for every kernel: each executable defines its kernel's name (kgate_add_kernel
// generates that one line); -DKGATE_KERNEL_NAME="name" still works for a build of one's own.
#ifndef KGATE_KERNEL_NAME
extern "C" const char kgate_kernel_name[];
#define KGATE_KERNEL_NAME kgate_kernel_name
#endif

namespace {

// One runner (one device context) for every benchmark, made when the first one runs.
kgate::Runner& runner(kgate::Backend backend) {
  static kgate::Runner r(backend);
  return r;
}

void run_case(benchmark::State& state, const kgate::KernelInfo* kernel, kgate::Case c) {
  auto& r = runner(kernel->backend);
  for (auto _ : state) {
    const auto ns = r.time_launches(*kernel, c, 1, /*flush_l2=*/true);
    state.SetIterationTime(ns.front() * 1e-9);
  }
  const int64_t bytes =
      c.numel_hint() * static_cast<int64_t>(kgate::dtype_size(c.dtype)) * 2;  // read + write
  state.SetBytesProcessed(state.iterations() * bytes);
  state.SetLabel(c.id());
}

}  // namespace

int main(int argc, char** argv) {
  constexpr int kSkipped = 77;
  const auto& kernel = kgate::find_kernel(KGATE_KERNEL_NAME);
  const auto& op = kgate::find_op(kernel.op);
  if (!kernel.timed) {
    std::fprintf(stderr,
                 "SKIPPED: %s is a correctness twin, not a deployment candidate: not timed\n",
                 kernel.name.c_str());
    return kSkipped;
  }
  std::string why;
  if (kernel.backend == kgate::Backend::cuda && !kgate::cuda::device_available(&why)) {
    std::fprintf(stderr, "SKIPPED: %s (%s runs on the GPU)\n", why.c_str(), kernel.name.c_str());
    return kSkipped;
  }
  for (const auto& c : kgate::speed_cases(op, kernel, /*seed=*/1, 5)) {
    std::string name = kernel.name + "/" + kgate::dtype_name(c.dtype);
    for (const auto& [sym, v] : c.dims) name += "/" + sym + ":" + std::to_string(v);
    benchmark::RegisterBenchmark(name.c_str(), run_case, &kernel, c)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
  // Which kernel a JSON output belongs to, for whoever reads it inside a kgate report.
  benchmark::AddCustomContext("kgate_kernel", kernel.name);
  benchmark::AddCustomContext("kgate_op", kernel.op);
  benchmark::AddCustomContext("kgate_backend", kgate::backend_name(kernel.backend));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
