// l2_normalize_cpu: a plain CPU kernel of the op (f32, any strides), so that a machine without a
// GPU runs the whole gate end to end. L2N_DROP_TAIL builds the wrong twin.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "runtime/kernel.hpp"

#ifndef L2N_DROP_TAIL
#define L2N_DROP_TAIL false
#define L2N_NAME "l2_normalize_cpu"
#else
#define L2N_NAME "l2_normalize_cpu_tail_dropped"
#endif

namespace {

void launch(const kgate::KernelCall& call) {
  const kgate::TensorView& x = call.inputs.at(0);
  const kgate::TensorView& y = call.outputs.at(0);
  if (x.dtype != kgate::DType::f32) throw std::runtime_error(L2N_NAME ": f32 only");
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  const int64_t end = L2N_DROP_TAIL ? n - n % 4 : n;
  const float eps = static_cast<float>(call.attributes.at("eps"));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.as<const float>() + r * x.strides[0];
    float* yr = y.as<float>() + r * y.strides[0];
    double sum = 0;
    for (int64_t c = 0; c < end; ++c)
      sum += static_cast<double>(xr[c * x.strides[1]]) * xr[c * x.strides[1]];
    const float norm = std::max(static_cast<float>(std::sqrt(sum)), eps);
    for (int64_t c = 0; c < end; ++c) yr[c * y.strides[1]] = xr[c * x.strides[1]] / norm;
  }
}

KGATE_REGISTER_KERNEL(([] {
  kgate::KernelInfo k =
      kgate::cpu_kernel(L2N_NAME, "l2_normalize", {kgate::DType::f32}, __FILE__, launch);
  k.timed = false;  // a correctness twin: no CPU loop is a deployment candidate
  return k;
})());

}  // namespace
