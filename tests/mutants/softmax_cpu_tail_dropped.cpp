// Mutant (cpu): softmax that skips the last N % 8 elements of each row, so the host-only pipeline
// can prove in CI that a broken kernel fails `kgate check` with exit 1 and a shrunk case.
#include <cmath>
#include <limits>

#include "runtime/kernel.hpp"

namespace kgate::mutants {
namespace {

void launch(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes.at(0), n = x.sizes.at(1), full = n / 8 * 8;  // BUG: drops the tail
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.as<const float>() + r * x.strides[0];
    float* yr = y.as<float>() + r * y.strides[0];
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < full; ++c) m = std::fmax(m, xr[c * x.strides[1]]);
    double s = 0;
    for (int64_t c = 0; c < full; ++c) s += std::exp(static_cast<double>(xr[c * x.strides[1]]) - m);
    for (int64_t c = 0; c < full; ++c)
      yr[c * y.strides[1]] = static_cast<float>(std::exp(xr[c * x.strides[1]] - m) / s);
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_softmax_cpu_tail_dropped";
  k.op = "softmax";
  k.backend = Backend::cpu;
  k.dtypes = {DType::f32};
  k.tile_sizes = {8};
  k.accepts_strided = true;
  k.source = "tests/mutants/softmax_cpu_tail_dropped.cpp";
  k.mutant = true;
  k.expected_catch = "ragged";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
