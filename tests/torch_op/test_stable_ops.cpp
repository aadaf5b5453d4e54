// A custom op registered with STABLE_TORCH_LIBRARY (the ABI-stable registration of libtorch's
// stable C shim), cpu: kgate loads, binds and pairs it (--baseline-torch-library) as it does a
// TORCH_LIBRARY op (tests/torch_op).
//   rms_norm(Tensor x, Tensor? weight, float eps) -> Tensor
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>

#include <cmath>
#include <cstdint>
#include <optional>

namespace {

using torch::stable::Tensor;

Tensor rms_norm(Tensor x, std::optional<Tensor> weight, double eps) {
  const auto f32 = torch::headeronly::ScalarType::Float;
  const Tensor xf = torch::stable::contiguous(torch::stable::to(x, f32));
  Tensor y = torch::stable::clone(xf);
  std::optional<Tensor> wf;
  if (weight) wf = torch::stable::contiguous(torch::stable::to(*weight, f32));
  const int64_t n = x.dim() == 0 ? 1 : x.size(x.dim() - 1);
  const int64_t rows = n == 0 ? 0 : xf.numel() / n;
  const float* in = static_cast<const float*>(xf.data_ptr());
  float* out = static_cast<float*>(y.data_ptr());
  const float* w = wf ? static_cast<const float*>(wf->data_ptr()) : nullptr;
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(in[r * n + i]) * in[r * n + i];
    const float inv = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(n) + eps));
    for (int64_t i = 0; i < n; ++i) out[r * n + i] = in[r * n + i] * inv * (w ? w[i] : 1.0f);
  }
  return torch::stable::to(y, x.scalar_type());
}

}  // namespace

STABLE_TORCH_LIBRARY(kgate_stable, m) {
  m.def("rms_norm(Tensor x, Tensor? weight, float eps) -> Tensor");
}

STABLE_TORCH_LIBRARY_IMPL(kgate_stable, CPU, m) { m.impl("rms_norm", TORCH_BOX(&rms_norm)); }
