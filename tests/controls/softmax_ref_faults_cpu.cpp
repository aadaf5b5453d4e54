// control_softmax_ref_faults_cpu (cpu backend): a correct f32 row softmax, any strides (the max,
// then exp(x - max) summed in double), on the op of
// tests/ops/reference_faults/softmax_ref_faults.op.json, whose reference raises on rows of 7
// elements and indexes past the row on rows of 13 (an exception on the CPU). kgate must report
// those cases as the reference's errors and this kernel invalid, never failed
// (tests/cli/reference_faults_cli.sh).
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/error.hpp"
#include "runtime/kernel.hpp"

namespace kgate::controls {
namespace {

void launch(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& y = call.outputs.at(0);
  if (x.dtype != DType::f32)
    throw Error(ErrorKind::usage, "control_softmax_ref_faults_cpu: only f32");
  const int64_t rows = x.sizes.at(0), n = x.sizes.at(1);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.as<const float>() + r * x.strides[0];
    float* yr = y.as<float>() + r * y.strides[0];
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < n; ++c) m = std::fmax(m, xr[c * x.strides[1]]);
    // A NaN is not the max (fmax), but exp(NaN - m) makes the sum, and so the row, NaN.
    double sum = 0;
    for (int64_t c = 0; c < n; ++c) sum += std::exp(static_cast<double>(xr[c * x.strides[1]]) - m);
    for (int64_t c = 0; c < n; ++c) {
      const double e = std::exp(static_cast<double>(xr[c * x.strides[1]]) - m);
      yr[c * y.strides[1]] = static_cast<float>(e / sum);
    }
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "control_softmax_ref_faults_cpu";
  k.op = "softmax_ref_faults";
  k.backend = Backend::cpu;
  k.dtypes = {DType::f32};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;
  k.source = "tests/controls/softmax_ref_faults_cpu.cpp";
  k.mutant = true;
  k.control = true;
  k.expected_catch = "reference_error";  // its op's reference fails on some cases by design
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::controls
