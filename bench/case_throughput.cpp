// Correctness-engine throughput (kgate.bench.case_throughput): Google Benchmark runs the generated
// correctness cases of a kernel through Runner::check_case, the whole per-case path of `kgate
// check` (values drawn on the device, poisoned and guarded outputs, the launch, input checksums,
// the eager reference, the fp64 oracle, the rule), and reports cases per second. One benchmark per
// kernel: softmax_block on a GPU, softmax_cpu on the CPU; a GPU benchmark without a GPU reports a
// visible SKIPPED error. The case set is the one `kgate check --cases N --seed 1` runs; cases/s is
// the second pass over it (the first, first_pass_cases/s, pays each kernel's first use).
// The "@OP" benchmarks run the same kernel and cases under an op file's op (tests/ops restates the
// built-in ops): the op-file reference's cost against the built-in C++ reference. op_file_compile
// times reading an op file and compiling its TorchScript; case_list the host side of a kernel's
// case list (generated, launch-reaching, guard and contract cases: no input drawn).
//   KGATE_THROUGHPUT_CASES=N  cases per iteration (default 500)
//   KGATE_COUNT_OPS=1         also count the ATen operators the measured cases dispatch (counter
//                             aten_ops/case; the most frequent printed to stderr): the host work
//                             per case that a GPU pays in launches whatever the tensors' sizes
//   KGATE_PHASE_TIMES=1       also the microseconds a case spends per --cost phase (generate,
//                             reference, oracle, kernel, judge, ...; each phase waits for the
//                             device at its ends, so the cases/s of such a run is lower): counters
//                             us/case:PHASE
#include <benchmark/benchmark.h>

#include <ATen/record_function.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/cost.hpp"
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

// The ATen operators dispatched while a counter is installed, by name (top-level and nested).
class OpCounter {
 public:
  OpCounter() {
    handle_ = at::addGlobalCallback(
        at::RecordFunctionCallback([](const at::RecordFunction& fn)
                                       -> std::unique_ptr<at::ObserverContext> {
          std::lock_guard<std::mutex> lock(mutex());
          ++counts()[std::string(kgate::cost::current_phase()) + "  " + fn.name()];
          return nullptr;
        }).scopes({at::RecordScope::FUNCTION}));
  }
  ~OpCounter() { at::removeCallback(handle_); }
  static int64_t total() {
    std::lock_guard<std::mutex> lock(mutex());
    int64_t n = 0;
    for (const auto& [name, c] : counts()) n += c;
    return n;
  }
  static void print(double per, size_t top) {
    std::lock_guard<std::mutex> lock(mutex());
    std::vector<std::pair<int64_t, std::string>> v;
    std::map<std::string, int64_t> phases;
    for (const auto& [name, c] : counts()) {
      v.emplace_back(c, name);
      phases[name.substr(0, name.find("  "))] += c;
    }
    for (const auto& [phase, c] : phases)
      std::fprintf(stderr, "  %8.2f /case  in %s\n", static_cast<double>(c) / per,
                   phase.empty() ? "(no phase)" : phase.c_str());
    std::sort(v.rbegin(), v.rend());
    for (size_t i = 0; i < v.size() && i < top; ++i)
      std::fprintf(stderr, "  %8.2f /case  %s\n", static_cast<double>(v[i].first) / per,
                   v[i].second.c_str());
  }
  static void reset() {
    std::lock_guard<std::mutex> lock(mutex());
    counts().clear();
  }

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::map<std::string, int64_t>& counts() {
    static std::map<std::string, int64_t> c;
    return c;
  }
  at::CallbackHandle handle_;
};

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
  // Warm-up: one pass over the cases, timed apart (first_pass_cases/s). It pays what a process
  // pays once: each ATen and CUDA kernel's first use (CUDA loads modules lazily: a family's first
  // case can take 200 ms), the allocator's pools. (A worker of kgate check pays them once per
  // kernel: --cost shows them in that kernel's phases.)
  const auto first_pass = std::chrono::steady_clock::now();
  for (size_t i = 0; i < cases.size(); ++i) runner->check_case(kernel, cases[i], rules[i]);
  const double first_pass_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - first_pass).count();

  const bool count_ops = std::getenv("KGATE_COUNT_OPS") != nullptr;
  std::unique_ptr<OpCounter> counter;
  if (count_ops) {
    OpCounter::reset();
    kgate::cost::enable({});  // the phase of each operator (no device wait: nothing is timed)
    counter = std::make_unique<OpCounter>();
  }
  const bool phase_times = std::getenv("KGATE_PHASE_TIMES") != nullptr;
  if (phase_times) {
    if (!count_ops) kgate::cost::enable([] { kgate::cuda::synchronize_quietly(); });
    kgate::cost::take();  // from here: the measured cases only
  }
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
  state.counters["first_pass_cases/s"] = n / first_pass_s;
  state.counters["mean_elements"] = elements / n;
  if (phase_times) {
    const double per = n * static_cast<double>(state.iterations());
    for (const auto& [phase, s] : kgate::cost::take())
      state.counters["us/case:" + phase] = 1e6 * s / per;
    if (!count_ops) kgate::cost::disable();
  }
  if (counter) {
    counter.reset();
    kgate::cost::disable();
    const double per = n * static_cast<double>(state.iterations());
    state.counters["aten_ops/case"] = static_cast<double>(OpCounter::total()) / per;
    std::fprintf(stderr, "%s%s%s: ATen operators per case, most frequent first\n",
                 kernel_name.c_str(), as_op.empty() ? "" : "@", as_op.c_str());
    OpCounter::print(per, 40);
  }
  // A correct kernel fails nothing: a non-zero count here is a false rejection to investigate.
  state.counters["failed"] = static_cast<double>(failed);
}

// The host side of a kernel's case list (kgate check's generate phase before any input is drawn):
// the generated cases, the launch-reaching ragged cases, guard and contract cases, at the defaults.
void case_list(benchmark::State& state, const std::string& kernel_name) {
  const auto& kernel = kgate::find_kernel(kernel_name);
  const kgate::CheckOptions options;
  size_t n = 0;
  for (auto _ : state) n = kgate::correctness_cases(kernel, options).size();
  state.counters["cases"] = static_cast<double>(n);
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
  for (const char* kernel : {"softmax_block", "rms_norm_block", "softmax_cpu"})
    benchmark::RegisterBenchmark((std::string("case_list/") + kernel).c_str(), case_list,
                                 std::string(kernel))
        ->Unit(benchmark::kMillisecond);
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
