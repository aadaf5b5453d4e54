// Correctness-engine throughput (kgate.bench.case_throughput): Google Benchmark runs the generated
// correctness cases of a kernel through Runner::check_case, the whole per-case path of `kgate
// check` (values drawn on the device, poisoned and guarded outputs, the launch, input checksums,
// the eager reference, the fp64 oracle, the rule), and reports cases per second. One benchmark per
// kernel: softmax_block on a GPU, softmax_cpu on the CPU; a GPU benchmark without a GPU reports a
// visible SKIPPED error. The case set is the one `kgate check --cases N --seed 1` runs.
// The "@OP" benchmarks run the same kernel and cases under an op file's op (tests/ops restates the
// built-in ops): the op-file reference's cost against the built-in C++ reference. op_file_compile
// times reading an op file and compiling its TorchScript.
//   KGATE_THROUGHPUT_CASES=N  cases per iteration (default 500)
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "core/op_file.hpp"
#include "references/catalogue.hpp"
#include "references/script_op.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/pipeline.hpp"

namespace {

int64_t case_count() {
  const char* env = std::getenv("KGATE_THROUGHPUT_CASES");
  const int64_t n = env ? std::atoll(env) : 500;
  return n > 0 ? n : 500;
}

void run_cases(benchmark::State& state, const std::string& kernel_name, const std::string& as_op) {
  const auto& kernel = kgate::find_kernel(kernel_name);
  std::string why;
  if (kernel.backend == kgate::Backend::cuda && !kgate::cuda::device_available(&why)) {
    state.SkipWithError(("SKIPPED: no GPU: " + why).c_str());
    return;
  }
  static std::unique_ptr<kgate::Runner> runners[2];
  auto& runner = runners[kernel.backend == kgate::Backend::cuda ? 1 : 0];
  if (!runner) runner = std::make_unique<kgate::Runner>(kernel.backend);

  const auto& builtin = kgate::find_op(kernel.op);
  const auto& op = kgate::find_op(as_op.empty() ? kernel.op : as_op);
  kgate::CheckOptions options;
  kgate::props::GeneratorOptions gen;
  gen.seed = options.seed;
  gen.cases = case_count();
  // The built-in op's cases (the same ids), renamed to the op file's op when one is named.
  auto cases = kgate::props::generate_cases(builtin, kgate::traits_of(kernel), gen);
  for (auto& c : cases) c.op = op.name;
  std::vector<kgate::correctness::RuleConfig> rules;
  double elements = 0;
  for (const auto& c : cases) {
    rules.push_back(kgate::rule_for(op, c.dtype, options, kernel.name));
    elements += static_cast<double>(c.numel_hint());
  }
  // Warm-up: allocator pools, the ATen kernels of the references, lazy CUDA module loading.
  for (size_t i = 0; i < cases.size() && i < 16; ++i)
    runner->check_case(kernel, cases[i], rules[i]);

  int64_t failed = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < cases.size(); ++i)
      if (runner->check_case(kernel, cases[i], rules[i]).outcome == kgate::Outcome::failed)
        ++failed;
  }
  const double n = static_cast<double>(cases.size());
  state.counters["cases/s"] =
      benchmark::Counter(n * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["cases"] = n;
  state.counters["mean_elements"] = elements / n;
  // A correct kernel fails nothing: a non-zero count here is a false rejection to investigate.
  state.counters["failed"] = static_cast<double>(failed);
}

void compile_op_file(benchmark::State& state, const std::string& path) {
  for (auto _ : state) {
    const auto file = kgate::read_op_file(path);
    benchmark::DoNotOptimize(kgate::script_reference(file));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string ops = std::string(KGATE_SOURCE_DIR) + "/tests/ops";
  kgate::load_op_files(ops);
  const std::pair<const char*, const char*> runs[] = {{"softmax_block", ""},
                                                      {"softmax_cpu", ""},
                                                      {"softmax_block", "softmax_script"},
                                                      {"softmax_cpu", "softmax_script"},
                                                      {"rms_norm_block", ""},
                                                      {"rms_norm_block", "rms_norm_script"}};
  for (const auto& [kernel, as_op] : runs)
    benchmark::RegisterBenchmark(
        (std::string("case_throughput/") + kernel + (*as_op ? std::string("@") + as_op : ""))
            .c_str(),
        run_cases, std::string(kernel), std::string(as_op))
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(1);
  for (const auto& path : kgate::op_file_paths(ops))
    benchmark::RegisterBenchmark(("op_file_compile/" + path.substr(path.rfind('/') + 1)).c_str(),
                                 compile_op_file, path)
        ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
