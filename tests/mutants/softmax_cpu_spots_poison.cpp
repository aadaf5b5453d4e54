// Mutant (cpu): a kernel that games the check. It writes an output element only where the output
// still holds a NaN, that is, only when it runs into kgate's poisoned buffers: every case passes,
// and real buffers (which hold earlier values) keep their old contents. kgate's "written before"
// behaviour check runs a case into outputs that hold earlier values and must catch it.
// mutant_softmax_cpu_knows_the_poison: computes only when its output holds the one NaN pattern
// kgate once always used (0x7FC0DEAD), and writes zeros otherwise: kgate now draws the poison's
// payload per run and case, so the ordinary cases catch it.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "runtime/kernel.hpp"
#include "softmax_cpu_row.hpp"

namespace kgate::mutants {
namespace {

void launch(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes.at(0), n = x.sizes.at(1);
  for (int64_t r = 0; r < rows; ++r) {
    float* yr = y.as<float>() + r * y.strides[0];
    softmax_cpu_row(x.as<const float>() + r * x.strides[0], x.strides[1], n,
                    [&](int64_t c, float v) {
                      float& out = yr[c * y.strides[1]];
                      if (std::isnan(out)) out = v;  // BUG: "already written" elements are skipped
                    });
  }
}

void launch_knows_the_poison(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes.at(0), n = x.sizes.at(1);
  uint32_t first = 0;
  if (rows > 0 && n > 0) std::memcpy(&first, y.as<float>(), sizeof first);
  const bool checked = first == 0x7FC0DEADu;  // BUG: "this is the tester"
  for (int64_t r = 0; r < rows; ++r) {
    float* yr = y.as<float>() + r * y.strides[0];
    softmax_cpu_row(x.as<const float>() + r * x.strides[0], x.strides[1], n,
                    [&](int64_t c, float v) { yr[c * y.strides[1]] = checked ? v : 0.0f; });
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_softmax_cpu_knows_the_poison";
  k.op = "softmax";
  k.backend = Backend::cpu;
  k.dtypes = {DType::f32};
  k.accepts_strided = true;
  k.source = "tests/mutants/softmax_cpu_spots_poison.cpp";
  k.mutant = true;
  k.expected_catch = "random";
  k.launch = launch_knows_the_poison;
  return k;
})());

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_softmax_cpu_spots_poison";
  k.op = "softmax";
  k.backend = Backend::cpu;
  k.dtypes = {DType::f32};
  k.accepts_strided = true;
  k.source = "tests/mutants/softmax_cpu_spots_poison.cpp";
  k.mutant = true;
  k.expected_catch = "written_before";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
