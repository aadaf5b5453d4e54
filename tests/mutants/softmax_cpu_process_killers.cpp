// Mutants (cpu) that take their process down: one crashes (a store through a null pointer), one
// hangs. `kgate check` runs each kernel in a worker process under a watchdog, so these must fail
// alone, with a clear message, while every other kernel's results are kept.
#include <atomic>

#include "runtime/kernel.hpp"

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

}  // namespace
}  // namespace kgate::mutants
