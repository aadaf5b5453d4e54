// Mutant (cpu): softmax that also stores its result into its input (using x as scratch space, as an
// "in place when possible" optimization would). Every output element is right; the caller's input
// is not. Only the input checksum sees it, in any family: the memory test of its kernel test target
// must fail (kgate_add_kernel FAILS_TEST); expected: random.
// Correct twin: kernels/softmax/softmax_cpu.cpp.
#include "runtime/kernel.hpp"
#include "tests/mutants/softmax_cpu_row.hpp"

namespace kgate::mutants {
namespace {

void launch(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  for (int64_t r = 0; r < x.sizes.at(0); ++r) {
    float* xr = x.as<float>() + r * x.strides[0];
    float* yr = y.as<float>() + r * y.strides[0];
    softmax_cpu_row(xr, x.strides[1], x.sizes[1],
                    [&](int64_t c, float v) { yr[c * y.strides[1]] = v; });
    for (int64_t c = 0; c < x.sizes[1]; ++c) xr[c * x.strides[1]] = yr[c * y.strides[1]];  // BUG
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_softmax_cpu_writes_input";
  k.op = "softmax";
  k.backend = Backend::cpu;
  k.dtypes = {DType::f32};
  k.accepts_strided = true;
  k.source = "tests/mutants/softmax_cpu_writes_input.cpp";
  k.mutant = true;
  k.expected_catch = "random";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
