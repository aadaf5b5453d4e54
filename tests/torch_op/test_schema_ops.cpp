// Custom ops whose schemas use every argument kind production torch-op libraries use, registered
// with TORCH_LIBRARY (cpu): kgate binds each with a mapping and no adapter (tests/torch_op).
//   rms_norm             Tensor? weight (bound to the op's weight, or to None when mapped so)
//   rms_norm_sized       int hidden_size: a shape symbol; the op checks it against x
//   layer_norm_shaped    SymInt[] normalized_shape, Tensor? weight and bias, str mode
//   fused_add_rms_norm   Tensor(a!)? residual: an optional argument written in place
//   rms_norm_list        Tensor[] (x and weight in one list)
//   softmax_typed        ScalarType out_dtype: the dtype of the op's output
//   softmax_counted      returns (Tensor, int): the int is not judged
//   topk                 int k (a symbol of the outputs' shapes only), returns Tensor[]
//   rms_norm_strided_crashes  dies (abort) on a strided input: a crash outside a contract
//   gelu_into            Tensor! out (an unnamed alias set, as kernel-builder's schemas write it)
//   rms_norm_strided_*   refuse a strided input (TORCH_CHECK) / compute wrong on one / throw on
//                        an input they accept (contracts)
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace {

at::Tensor rms(const at::Tensor& x, const std::optional<at::Tensor>& weight, double eps) {
  const at::Tensor xf = x.to(at::kFloat);
  at::Tensor y = xf * at::rsqrt((xf * xf).mean({-1}, /*keepdim=*/true) + eps);
  if (weight && weight->defined()) y = y * weight->to(at::kFloat);
  return y.to(x.scalar_type());
}

at::Tensor rms_norm(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                    double epsilon) {
  return rms(input, weight, epsilon);
}

at::Tensor rms_norm_sized(const at::Tensor& x, const at::Tensor& weight, int64_t hidden_size,
                          double eps) {
  TORCH_CHECK(x.size(-1) == hidden_size, "hidden_size ", hidden_size, " but x has ", x.size(-1),
              " columns");
  return rms(x, weight, eps);
}

at::Tensor layer_norm_shaped(const at::Tensor& x, c10::SymIntArrayRef normalized_shape,
                             const std::optional<at::Tensor>& weight,
                             const std::optional<at::Tensor>& bias, double eps,
                             c10::string_view mode) {
  TORCH_CHECK(mode == "exact", "unknown mode '", std::string(mode), "'");
  TORCH_CHECK(normalized_shape.size() == 1 && normalized_shape[0] == x.size(-1),
              "normalized_shape ", normalized_shape, " does not end x's shape ", x.sizes());
  return at::layer_norm(x, C10_AS_INTARRAYREF_SLOW(normalized_shape), weight, bias, eps);
}

at::Tensor fused_add_rms_norm(const at::Tensor& x, const std::optional<at::Tensor>& residual,
                              const at::Tensor& weight, double eps) {
  if (!residual) return rms(x, weight, eps);
  const at::Tensor r = (x.to(at::kFloat) + residual->to(at::kFloat)).to(x.scalar_type());
  residual->copy_(r);
  return rms(r, weight, eps);
}

at::Tensor rms_norm_list(at::TensorList xw, double eps) {
  TORCH_CHECK(xw.size() == 2, "expected [x, weight]");
  return rms(xw[0], xw[1], eps);
}

at::Tensor softmax_typed(const at::Tensor& x, at::ScalarType out_dtype) {
  return at::softmax(x.to(at::kFloat), -1).to(out_dtype);
}

std::tuple<at::Tensor, int64_t> softmax_counted(const at::Tensor& x) {
  return {at::softmax(x.to(at::kFloat), -1).to(x.scalar_type()), x.numel()};
}

std::vector<at::Tensor> topk(const at::Tensor& x, int64_t k) {
  auto [values, indices] = at::topk(x, k, -1);
  return {values, indices};
}

// Contracts: three ways an op meets a strided (non-contiguous) input.
at::Tensor rms_norm_strided_refused(const at::Tensor& x, const at::Tensor& weight, double eps) {
  TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
  return rms(x, weight, eps);
}

at::Tensor rms_norm_strided_wrong(const at::Tensor& x, const at::Tensor& weight, double eps) {
  // Reads x as if it were contiguous: garbage for a strided view, as a raw-pointer kernel would.
  const at::Tensor flat =
      at::from_blob(x.data_ptr(), x.sizes(), x.options()).clone();  // ignores x's strides
  return rms(flat, weight, eps);
}

at::Tensor rms_norm_throws_inside(const at::Tensor& x, const at::Tensor& weight, double eps) {
  TORCH_CHECK(x.size(-1) % 2 == 0, "odd hidden sizes are not implemented");
  return rms(x, weight, eps);
}

void gelu_into(at::Tensor& out, const at::Tensor& input) { out.copy_(at::gelu(input)); }

// Dies on a strided input (as a kernel reading past its buffer would): a crash, not a refusal.
at::Tensor rms_norm_strided_crashes(const at::Tensor& x, const at::Tensor& weight, double eps) {
  if (x.dim() > 0 && x.stride(-1) != 1) std::abort();
  return rms(x, weight, eps);
}

}  // namespace

TORCH_LIBRARY(kgate_schema, m) {
  m.def("rms_norm(Tensor input, Tensor? weight, float epsilon) -> Tensor");
  m.def("rms_norm_sized(Tensor x, Tensor weight, int hidden_size, float eps) -> Tensor");
  m.def(
      "layer_norm_shaped(Tensor x, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, "
      "float eps, str mode) -> Tensor");
  m.def("fused_add_rms_norm(Tensor x, Tensor(a!)? residual, Tensor weight, float eps) -> Tensor");
  m.def("rms_norm_list(Tensor[] xw, float eps) -> Tensor");
  m.def("softmax_typed(Tensor x, ScalarType out_dtype) -> Tensor");
  m.def("softmax_counted(Tensor x) -> (Tensor, int)");
  m.def("topk(Tensor x, int k) -> Tensor[]");
  m.def("gelu_into(Tensor! out, Tensor input) -> ()");
  m.def("rms_norm_strided_crashes(Tensor x, Tensor weight, float eps) -> Tensor");
  m.def("rms_norm_strided_refused(Tensor x, Tensor weight, float eps) -> Tensor");
  m.def("rms_norm_strided_wrong(Tensor x, Tensor weight, float eps) -> Tensor");
  m.def("rms_norm_throws_inside(Tensor x, Tensor weight, float eps) -> Tensor");
}

TORCH_LIBRARY_IMPL(kgate_schema, CPU, m) {
  m.impl("rms_norm", &rms_norm);
  m.impl("rms_norm_sized", &rms_norm_sized);
  m.impl("layer_norm_shaped", &layer_norm_shaped);
  m.impl("fused_add_rms_norm", &fused_add_rms_norm);
  m.impl("rms_norm_list", &rms_norm_list);
  m.impl("softmax_typed", &softmax_typed);
  m.impl("softmax_counted", &softmax_counted);
  m.impl("topk", &topk);
  m.impl("gelu_into", &gelu_into);
  m.impl("rms_norm_strided_crashes", &rms_norm_strided_crashes);
  m.impl("rms_norm_strided_refused", &rms_norm_strided_refused);
  m.impl("rms_norm_strided_wrong", &rms_norm_strided_wrong);
  m.impl("rms_norm_throws_inside", &rms_norm_throws_inside);
}
