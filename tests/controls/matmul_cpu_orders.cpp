// Controls (cpu backend) on the op of kernels/gemm/package/matmul.op.json: three correct f32 GEMMs
// with float accumulation whose K sums run in orders other than eager's, for CI machines without
// a GPU. Any strides. Each must pass:
//   control_matmul_cpu_blocked   K in blocks of 64: a partial sum per block (k ascending), the
//                                blocks' partials added to the total in order
//   control_matmul_cpu_pairwise  K summed pairwise: the range halved recursively, runs of at most
//                                8 products summed left to right, the two halves' sums added
//   control_matmul_cpu_reverse   K summed from K-1 down to 0 with std::fma
#include <cmath>
#include <cstdint>

#include "core/error.hpp"
#include "runtime/kernel.hpp"

namespace kgate::controls {
namespace {

/// One output element's K products a[r][k] * b[k][c], reachable by k.
struct Dot {
  const float* a;  ///< row r of a
  const float* b;  ///< column c of b
  int64_t as, bs;  ///< strides along K

  float product(int64_t k) const { return a[k * as] * b[k * bs]; }
};

float sum_blocked(const Dot& d, int64_t k) {
  constexpr int64_t kBlock = 64;
  float total = 0.f;
  for (int64_t k0 = 0; k0 < k; k0 += kBlock) {
    float part = 0.f;
    for (int64_t kk = k0; kk < k0 + kBlock && kk < k; ++kk) part += d.product(kk);
    total += part;
  }
  return total;
}

/// Products lo..hi-1 summed pairwise.
float sum_pairwise(const Dot& d, int64_t lo, int64_t hi) {
  if (hi - lo <= 8) {
    float s = 0.f;
    for (int64_t kk = lo; kk < hi; ++kk) s += d.product(kk);
    return s;
  }
  const int64_t mid = lo + (hi - lo) / 2;
  return sum_pairwise(d, lo, mid) + sum_pairwise(d, mid, hi);
}

float sum_reverse(const Dot& d, int64_t k) {
  float acc = 0.f;
  for (int64_t kk = k - 1; kk >= 0; --kk) acc = std::fma(d.a[kk * d.as], d.b[kk * d.bs], acc);
  return acc;
}

enum Order { kBlocked, kPairwise, kReverse };

template <int kOrder>
void launch(const KernelCall& call) {
  const TensorView& a = call.inputs.at(0);
  const TensorView& b = call.inputs.at(1);
  const TensorView& out = call.outputs.at(0);
  if (a.dtype != DType::f32) throw Error(ErrorKind::usage, "control_matmul_cpu: only f32");
  const int64_t m = a.sizes[0], k = a.sizes[1], n = b.sizes[1];
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      const Dot d{a.as<const float>() + r * a.strides[0], b.as<const float>() + c * b.strides[1],
                  a.strides[1], b.strides[0]};
      const float v = kOrder == kBlocked    ? sum_blocked(d, k)
                      : kOrder == kPairwise ? sum_pairwise(d, 0, k)
                                            : sum_reverse(d, k);
      out.as<float>()[r * out.strides[0] + c * out.strides[1]] = v;
    }
}

KernelInfo info(const char* name, void (*fn)(const KernelCall&), std::vector<int64_t> tiles) {
  KernelInfo k;
  k.name = name;
  k.op = "matmul";
  k.backend = Backend::cpu;
  k.dtypes = {DType::f32};
  k.tile_sizes = std::move(tiles);
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;
  k.source = "tests/controls/matmul_cpu_orders.cpp";
  k.mutant = true;
  k.control = true;
  k.expected_catch = "control";
  k.launch = fn;
  return k;
}

KGATE_REGISTER_KERNEL(info("control_matmul_cpu_blocked", launch<kBlocked>, {64}));
KGATE_REGISTER_KERNEL(info("control_matmul_cpu_pairwise", launch<kPairwise>, {8}));
KGATE_REGISTER_KERNEL(info("control_matmul_cpu_reverse", launch<kReverse>, {}));

}  // namespace
}  // namespace kgate::controls
