// A torch-op library built as a Python extension module, as kernel-builder's and the inference
// engines' `_C` libraries are: its PyInit_ function calls the Python C API (PyModule_Create2),
// which stays undefined because extension modules are never linked to libpython. kgate loads it
// with the libpython of its torch's Python (runtime/torch_op.cpp), and its op runs without Python.
//   gelu(Tensor x) -> Tensor   (cpu)
#include <ATen/ATen.h>
#include <torch/library.h>

extern "C" void* PyModule_Create2(void* definition, int api_version);

extern "C" __attribute__((visibility("default"))) void* PyInit__kgate_python_module(void) {
  static char definition[128] = {};
  return PyModule_Create2(definition, 1013);
}

namespace {

at::Tensor gelu(const at::Tensor& x) { return at::gelu(x); }

}  // namespace

TORCH_LIBRARY(kgate_pymod, m) { m.def("gelu(Tensor x) -> Tensor"); }

TORCH_LIBRARY_IMPL(kgate_pymod, CPU, m) { m.impl("gelu", &gelu); }
