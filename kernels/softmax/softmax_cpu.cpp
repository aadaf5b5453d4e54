// softmax_cpu: the reference-quality CPU softmax over x:[B,N] (f32), any strides. Lets the whole
// kgate pipeline run end-to-end on machines without a GPU.
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels {
namespace {

void launch(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& y = call.outputs.at(0);
  if (x.dtype != DType::f32) throw Error(ErrorKind::usage, "softmax_cpu: only f32");
  const int64_t rows = x.sizes.at(0), n = x.sizes.at(1);
  const float* xp = x.as<const float>();
  float* yp = y.as<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = xp + r * x.strides[0];
    float* yr = yp + r * y.strides[0];
    float m = -std::numeric_limits<float>::infinity();
    bool nan = false;
    for (int64_t c = 0; c < n; ++c) {
      const float v = xr[c * x.strides[1]];
      nan |= std::isnan(v);
      m = std::fmax(m, v);
    }
    double s = 0;
    for (int64_t c = 0; c < n; ++c) s += std::exp(static_cast<double>(xr[c * x.strides[1]]) - m);
    if (nan) s = std::numeric_limits<double>::quiet_NaN();
    for (int64_t c = 0; c < n; ++c)
      yr[c * y.strides[1]] =
          static_cast<float>(std::exp(static_cast<double>(xr[c * x.strides[1]]) - m) / s);
  }
}

KGATE_REGISTER_KERNEL(cpu_kernel("softmax_cpu", "softmax", {DType::f32},
                                 "kernels/softmax/softmax_cpu.cpp", launch));

}  // namespace
}  // namespace kgate::kernels
