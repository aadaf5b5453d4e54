// pair_cpu_a: l2_normalize on the cpu (f32, f16, bf16; any strides), fp32 accumulation in 8 partial
// sums. kExtraPasses (PAIR_CPU_EXTRA_PASSES_A): that many more read passes over each row, each
// behind a compiler barrier and stored to a volatile (real work; the results do not change).
#include <cmath>
#include <cstdint>

#include "runtime/dispatch.hpp"  // dispatch_floating
#include "runtime/kernel.hpp"

#ifndef PAIR_CPU_EXTRA_PASSES
#define PAIR_CPU_EXTRA_PASSES 0
#endif

namespace {

constexpr int kExtraPasses = PAIR_CPU_EXTRA_PASSES;
volatile float extra_sink = 0.f;

template <typename T>
float sum_squares(const T* xr, int64_t n, int64_t stride) {
  float part[8] = {};
  int64_t c = 0;
  if (stride == 1)
    for (; c + 8 <= n; c += 8)
      for (int j = 0; j < 8; ++j) {
        const float v = static_cast<float>(xr[c + j]);
        part[j] += v * v;
      }
  for (; c < n; ++c) {
    const float v = static_cast<float>(xr[c * stride]);
    part[c % 8] += v * v;
  }
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

// y = x / norm over a contiguous row, in blocks of 8 (independent: the compiler vectorizes them).
template <typename T>
void scale_contiguous(const T* __restrict xr, T* __restrict yr, int64_t n, float norm) {
  int64_t c = 0;
  for (; c + 8 <= n; c += 8)
    for (int j = 0; j < 8; ++j) yr[c + j] = static_cast<T>(static_cast<float>(xr[c + j]) / norm);
  for (; c < n; ++c) yr[c] = static_cast<T>(static_cast<float>(xr[c]) / norm);
}

template <typename T>
void run(const kgate::KernelCall& call) {
  const kgate::TensorView& x = call.inputs.at(0);
  const kgate::TensorView& y = call.outputs.at(0);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  const float eps = static_cast<float>(call.attributes.at("eps"));
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x.as<const T>() + r * x.strides[0];
    T* yr = y.as<T>() + r * y.strides[0];
    const float sum = sum_squares(xr, n, x.strides[1]);
    for (int pass = 0; pass < kExtraPasses; ++pass) {
      asm volatile(
          "" ::
              : "memory");  // (as far as the compiler knows, the row changed: it is read again)
      extra_sink = sum_squares(xr, n, x.strides[1]);
    }
    const float root = std::sqrt(sum);
    const float norm = root < eps ? eps : root;  // (a NaN norm stays NaN)
    if (x.strides[1] == 1 && y.strides[1] == 1) scale_contiguous(xr, yr, n, norm);
    else
      for (int64_t c = 0; c < n; ++c)
        yr[c * y.strides[1]] = static_cast<T>(static_cast<float>(xr[c * x.strides[1]]) / norm);
  }
}

void launch(const kgate::KernelCall& call) {
  kgate::dispatch_floating(call.inputs.at(0).dtype, "pair_cpu_a",
                           [&](auto t) { run<kgate::element_t<decltype(t)>>(call); });
}

KGATE_REGISTER_KERNEL(([] {
  kgate::KernelInfo k;
  k.name = "pair_cpu_a";
  k.op = "l2_normalize";
  k.backend = kgate::Backend::cpu;
  k.dtypes = {kgate::DType::f32, kgate::DType::f16, kgate::DType::bf16};
  k.accepts_strided = true;
  k.source = __FILE__;
  k.launch = launch;
  return k;
})());

}  // namespace
