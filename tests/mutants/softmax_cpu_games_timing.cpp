// Mutants (cpu) that game the timing rather than the checks: each is right on every call the
// correctness phase makes, and wrong (or cheap) only once a buffer or shape is called again and
// again, as a timing loop does. Checked timing (a randomly chosen timed launch per block is judged,
// buffer sets are redrawn between blocks) must fail them "wrong while timed"; softmax_cpu, their
// correct twin, passes the same gate.
//  - mutant_softmax_cpu_right_first_calls: right on its first 64 calls for a shape, zeros after.
//  - mutant_softmax_cpu_caches_by_pointer: from the 4th call on the same (x, y) pointers, copies
//    the output it stored for them instead of computing (stale once the inputs change in place).
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "runtime/kernel.hpp"
#include "softmax_cpu_row.hpp"

namespace kgate::mutants {
namespace {

void softmax_into(const KernelCall& call, bool zeros) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes.at(0), n = x.sizes.at(1);
  for (int64_t r = 0; r < rows; ++r) {
    float* yr = y.as<float>() + r * y.strides[0];
    softmax_cpu_row(x.as<const float>() + r * x.strides[0], x.strides[1], n,
                    [&](int64_t c, float v) { yr[c * y.strides[1]] = zeros ? 0.0f : v; });
  }
}

std::mutex mutex;

void launch_right_first_calls(const KernelCall& call) {
  static std::map<std::pair<int64_t, int64_t>, int64_t> calls;
  int64_t n = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    n = ++calls[{call.inputs.at(0).sizes.at(0), call.inputs.at(0).sizes.at(1)}];
  }
  softmax_into(call, n > 64);  // BUG: "nobody checks after the first few calls"
}

void launch_caches_by_pointer(const KernelCall& call) {
  struct Entry {
    int64_t calls = 0;
    std::vector<float> output;  // row-major B x N
  };
  static std::map<std::tuple<const void*, const void*, int64_t, int64_t>, Entry> cache;
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes.at(0), n = x.sizes.at(1);
  std::lock_guard<std::mutex> lock(mutex);
  Entry& e = cache[{x.data, y.data, rows, n}];
  if (++e.calls > 3 && static_cast<int64_t>(e.output.size()) == rows * n) {
    // BUG: "same buffers, same result": a copy instead of the softmax.
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < n; ++c)
        y.as<float>()[r * y.strides[0] + c * y.strides[1]] =
            e.output[static_cast<size_t>(r * n + c)];
    return;
  }
  softmax_into(call, false);
  e.output.resize(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c)
      e.output[static_cast<size_t>(r * n + c)] = y.as<float>()[r * y.strides[0] + c * y.strides[1]];
}

KernelInfo games_timing(const char* name, void (*launch)(const KernelCall&)) {
  KernelInfo k;
  k.name = name;
  k.op = "softmax";
  k.backend = Backend::cpu;
  k.dtypes = {DType::f32};
  k.accepts_strided = true;
  k.source = "tests/mutants/softmax_cpu_games_timing.cpp";
  k.mutant = true;
  k.expected_catch = "timed";
  k.launch = launch;
  return k;
}

KGATE_REGISTER_KERNEL(games_timing("mutant_softmax_cpu_right_first_calls",
                                   launch_right_first_calls));
KGATE_REGISTER_KERNEL(games_timing("mutant_softmax_cpu_caches_by_pointer",
                                   launch_caches_by_pointer));

}  // namespace
}  // namespace kgate::mutants
