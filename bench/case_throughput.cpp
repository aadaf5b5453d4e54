// Correctness-engine throughput (kgate.bench.case_throughput): Google Benchmark runs the generated
// correctness cases of a kernel through Runner::check_case, the whole per-case path of `kgate
// check` (values drawn on the device, poisoned and guarded outputs, the launch, input checksums, the
// eager reference, the fp64 oracle, the rule), and reports cases per second. One benchmark per
// kernel: softmax_block on a GPU, softmax_cpu on the CPU; a GPU benchmark without a GPU reports a
// visible SKIPPED error. The case set is the one `kgate check --cases N --seed 1` runs.
//   KGATE_THROUGHPUT_CASES=N  cases per iteration (default 500)
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "references/catalogue.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/pipeline.hpp"

namespace {

int64_t case_count() {
  const char* env = std::getenv("KGATE_THROUGHPUT_CASES");
  const int64_t n = env ? std::atoll(env) : 500;
  return n > 0 ? n : 500;
}

void run_cases(benchmark::State& state, const std::string& kernel_name) {
  const auto& kernel = kgate::find_kernel(kernel_name);
  std::string why;
  if (kernel.backend == kgate::Backend::cuda && !kgate::cuda::device_available(&why)) {
    state.SkipWithError(("SKIPPED: no GPU: " + why).c_str());
    return;
  }
  static std::unique_ptr<kgate::Runner> runners[2];
  auto& runner = runners[kernel.backend == kgate::Backend::cuda ? 1 : 0];
  if (!runner) runner = std::make_unique<kgate::Runner>(kernel.backend);

  const auto& op = kgate::find_op(kernel.op);
  kgate::CheckOptions options;
  kgate::props::GeneratorOptions gen;
  gen.seed = options.seed;
  gen.cases = case_count();
  const auto cases = kgate::props::generate_cases(op, kgate::traits_of(kernel), gen);
  std::vector<kgate::correctness::RuleConfig> rules;
  double elements = 0;
  for (const auto& c : cases) {
    rules.push_back(kgate::rule_for(op, c.dtype, options, kernel.name));
    elements += static_cast<double>(c.numel_hint());
  }
  // Warm-up: allocator pools, the ATen kernels of the references, lazy CUDA module loading.
  for (size_t i = 0; i < cases.size() && i < 16; ++i) runner->check_case(kernel, cases[i], rules[i]);

  int64_t failed = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < cases.size(); ++i)
      if (runner->check_case(kernel, cases[i], rules[i]).outcome == kgate::Outcome::failed) ++failed;
  }
  const double n = static_cast<double>(cases.size());
  state.counters["cases/s"] = benchmark::Counter(n * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["cases"] = n;
  state.counters["mean_elements"] = elements / n;
  // A correct kernel fails nothing: a non-zero count here is a false rejection to investigate.
  state.counters["failed"] = static_cast<double>(failed);
}

}  // namespace

int main(int argc, char** argv) {
  for (const char* name : {"softmax_block", "softmax_cpu"})
    benchmark::RegisterBenchmark((std::string("case_throughput/") + name).c_str(), run_cases, std::string(name))
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(1);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
