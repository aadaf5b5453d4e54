// Mutant (cpu): softmax whose row sum is split into parts, summed in float, and the number of
// parts changes from call to call (as a thread pool's split does with the threads it gets). Each
// output is within tolerance, but two runs on the same input differ in their last bits: only the
// bitwise determinism check catches it; the determinism test of its kernel test target must fail
// (kgate_add_kernel FAILS_TEST).
// Correct twin: kernels/softmax/softmax_cpu.cpp.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "runtime/kernel.hpp"

namespace kgate::mutants {
namespace {

std::atomic<int64_t> calls{0};

void launch(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes.at(0), n = x.sizes.at(1);
  const int64_t parts = calls++ % 2 == 0 ? 1 : 4;  // BUG: the split depends on the call
  const int64_t part = std::max<int64_t>(1, (n + parts - 1) / parts);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.as<const float>() + r * x.strides[0];
    float* yr = y.as<float>() + r * y.strides[0];
    float m = -std::numeric_limits<float>::infinity();
    bool nan = false;
    for (int64_t c = 0; c < n; ++c) {
      nan |= std::isnan(xr[c * x.strides[1]]);
      m = std::fmax(m, xr[c * x.strides[1]]);
    }
    float s = 0;
    for (int64_t first = 0; first < n; first += part) {
      float partial = 0;
      for (int64_t c = first; c < std::min(n, first + part); ++c)
        partial += std::exp(xr[c * x.strides[1]] - m);
      s += partial;
    }
    if (nan) s = std::numeric_limits<float>::quiet_NaN();
    for (int64_t c = 0; c < n; ++c) yr[c * y.strides[1]] = std::exp(xr[c * x.strides[1]] - m) / s;
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_softmax_cpu_nondeterministic";
  k.op = "softmax";
  k.backend = Backend::cpu;
  k.dtypes = {DType::f32};
  k.accepts_strided = true;
  k.source = "tests/mutants/softmax_cpu_nondeterministic.cpp";
  k.mutant = true;
  k.expected_catch = "determinism";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
