// The Google Benchmark target of one kernel (kgate_add_kernel builds it with KGATE_KERNEL_NAME):
// one benchmark per speed shape, manual time = device time per launch (CUPTI; chrono on cpu).
// Run with --benchmark_repetitions=N --benchmark_enable_random_interleaving=true; the speed gate's
// statistics do not depend on this output.
#include <benchmark/benchmark.h>

#include <memory>

#include "references/catalogue.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/pipeline.hpp"

namespace {

kgate::Runner* runner(kgate::Backend backend, std::string* why) {
  static std::unique_ptr<kgate::Runner> r;
  if (!r) {
    if (backend == kgate::Backend::cuda && !kgate::cuda::device_available(why)) return nullptr;
    r = std::make_unique<kgate::Runner>(backend);
  }
  return r.get();
}

void run_case(benchmark::State& state, const kgate::KernelInfo* kernel, kgate::Case c) {
  std::string why;
  auto* r = runner(kernel->backend, &why);
  if (!r) {
    state.SkipWithError(("SKIPPED: " + why).c_str());
    return;
  }
  for (auto _ : state) {
    const auto ns = r->time_launches(*kernel, c, 1, /*flush_l2=*/true);
    state.SetIterationTime(ns.front() * 1e-9);
  }
  const int64_t bytes = c.numel_hint() * static_cast<int64_t>(kgate::dtype_size(c.dtype)) * 2;  // read + write
  state.SetBytesProcessed(state.iterations() * bytes);
  state.SetLabel(c.id());
}

}  // namespace

int main(int argc, char** argv) {
  const auto& kernel = kgate::find_kernel(KGATE_KERNEL_NAME);
  const auto& op = kgate::find_op(kernel.op);
  for (const auto& c : kgate::speed_cases(op, kernel, /*seed=*/1, 5)) {
    std::string name = kernel.name + "/" + kgate::dtype_name(c.dtype);
    for (const auto& [sym, v] : c.dims) name += "/" + sym + ":" + std::to_string(v);
    benchmark::RegisterBenchmark(name.c_str(), run_case, &kernel, c)->UseManualTime()->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
