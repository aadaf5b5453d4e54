// Mutants (cpu) that harm their process or the log: one crashes (a store through a null pointer),
// one hangs, one prints without end (as device printf can). `kgate check` runs each kernel in a
// worker process under a watchdog that also bounds its output, so the first two must fail alone,
// with a clear message, while every other kernel's results are kept, and the flood (whose values
// are right) must pass with the log readable. A fourth crashes only on rows whose length is a
// multiple of 5: kgate must go on with the remaining cases in fresh workers (the others pass),
// report each crashing case, and shrink one of them (in fresh workers) to a minimal case that ran.
#include <atomic>
#include <cstdio>

#include "runtime/kernel.hpp"
#include "tests/mutants/softmax_cpu_row.hpp"

namespace kgate::mutants {
namespace {

void crash(const KernelCall&) {
  volatile float* nowhere = nullptr;
  *nowhere = 1.0f;  // BUG: SIGSEGV
}

std::atomic<bool> forever{true};
void hang(const KernelCall&) {
  while (forever.load()) {  // BUG: never returns
  }
}

void softmax_rows(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t n = x.sizes.at(1);
  for (int64_t r = 0; r < x.sizes.at(0); ++r) {
    float* yr = y.as<float>() + r * y.strides[0];
    softmax_cpu_row(x.as<const float>() + r * x.strides[0], x.strides[1], n,
                    [&](int64_t c, float v) { yr[c * y.strides[1]] = v; });
  }
}

void crash_some(const KernelCall& call) {
  if (call.inputs.at(0).sizes.at(1) % 5 == 0) {
    volatile float* nowhere = nullptr;
    *nowhere = 1.0f;  // BUG: SIGSEGV on some shapes
  }
  softmax_rows(call);
}

void flood(const KernelCall& call) {
  for (int i = 0; i < 5000; ++i)  // BUG (of manners): about 280 KB of output per launch
    std::printf("flood line %d: the kernel reports progress nobody reads\n", i);
  std::fflush(stdout);
  softmax_rows(call);
}

KernelInfo mutant(const char* name, void (*launch)(const KernelCall&)) {
  KernelInfo k;
  k.name = name;
  k.op = "softmax";
  k.backend = Backend::cpu;
  k.dtypes = {DType::f32};
  k.source = "tests/mutants/softmax_cpu_process_killers.cpp";
  k.mutant = true;
  k.expected_catch = "isolation";
  k.launch = launch;
  return k;
}

KGATE_REGISTER_KERNEL(mutant("mutant_softmax_cpu_segfault", crash));
KGATE_REGISTER_KERNEL(mutant("mutant_softmax_cpu_hang", hang));
KGATE_REGISTER_KERNEL(mutant("mutant_softmax_cpu_printf_flood", flood));
KGATE_REGISTER_KERNEL(mutant("mutant_softmax_cpu_crash_some", crash_some));

}  // namespace
}  // namespace kgate::mutants
