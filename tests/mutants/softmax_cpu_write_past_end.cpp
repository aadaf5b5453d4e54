// Mutant (cpu): softmax that stores each row in whole 8-lane chunks, padding lanes included: those
// of a row land in the next row (which overwrites them), those of the last row past the end of y
// (up to 7 elements, inside the runner's guard band). Every output element is right. Only the
// guard bands see it (N % 8 != 0, any family): the memory test of its kernel test target must fail
// (kgate_add_kernel FAILS_TEST); expected: random.
// Correct twin: kernels/softmax/softmax_cpu.cpp.
#include <algorithm>

#include "runtime/kernel.hpp"
#include "tests/mutants/softmax_cpu_row.hpp"

namespace kgate::mutants {
namespace {

constexpr int64_t kLanes = 8;

void launch(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);  // contiguous (the runner's outputs are)
  const int64_t n = x.sizes.at(1);
  for (int64_t r = 0; r < x.sizes.at(0); ++r) {
    float* yr = y.as<float>() + r * n;
    float chunk[kLanes] = {};
    softmax_cpu_row(
        x.as<const float>() + r * x.strides[0], x.strides[1], n, [&](int64_t c, float v) {
          chunk[c % kLanes] = v;
          if (c % kLanes == kLanes - 1 || c == n - 1) {  // a full chunk, or the row's last one
            std::copy(chunk, chunk + kLanes,
                      yr + c / kLanes * kLanes);  // BUG: every lane, past n too
            std::fill(chunk, chunk + kLanes, 0.0f);
          }
        });
  }
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_softmax_cpu_write_past_end";
  k.op = "softmax";
  k.backend = Backend::cpu;
  k.dtypes = {DType::f32};
  k.tile_sizes = {kLanes};
  k.source = "tests/mutants/softmax_cpu_write_past_end.cpp";
  k.mutant = true;
  k.expected_catch = "random";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
