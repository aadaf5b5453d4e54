// GELU in float as ATen's CUDA kernel computes it (exact: erf; tanh approximation), under the
// kgate::kernels names the mutants of tests/mutants/ use. The formulas live in
// package_gelu_elementwise/gelu_kernels.cuh with the kernels' device code, so the mutants, the
// in-tree kernels and the packages compute GELU from one text.
#pragma once

#include "kernels/gelu/package_gelu_elementwise/gelu_kernels.cuh"

namespace kgate::kernels {

using kgate_device::gelu_erf;
using kgate_device::gelu_tanh;

}  // namespace kgate::kernels
