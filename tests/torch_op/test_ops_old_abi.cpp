// The same kind of library built with the other C++ ABI of libstdc++ (_GLIBCXX_USE_CXX11_ABI=0), as
// a library built for another torch build would be: loading it must fail with a clear message.
#undef _GLIBCXX_USE_CXX11_ABI
#define _GLIBCXX_USE_CXX11_ABI 0
#include <ATen/ATen.h>
#include <torch/library.h>

namespace {
at::Tensor twice(const at::Tensor& x) { return x * 2; }
}  // namespace

TORCH_LIBRARY(kgate_test_old_abi, m) { m.def("twice(Tensor x) -> Tensor", twice); }
