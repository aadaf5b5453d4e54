// Mutant: writes through a wild device pointer (an illegal address). The fault leaves the CUDA
// context unusable, so this kernel must fail alone: `kgate check` runs it in its own worker process
// and keeps every other kernel's results. A second mutant faults only on rows whose length is a
// multiple of 5 and is a (slow, one thread per row) softmax otherwise: `kgate check` must go on
// with the remaining cases in fresh workers after each fault, so that those pass, and shrink a
// faulting case in fresh workers to a minimal case that ran.
#include <cuda_runtime.h>

#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::mutants {
namespace {

__global__ void write_wild(float* y) {
  if (threadIdx.x == 0 && blockIdx.x == 0)
    y[int64_t{1} << 40] = 1.0f;  // BUG: far outside any allocation
}

__global__ void softmax_rows_naive(const float* x, float* y, int64_t rows, int64_t n, int64_t xr,
                                   int64_t xc, int64_t yr, int64_t yc) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float m = -__int_as_float(0x7f800000);
  for (int64_t j = 0; j < n; ++j) m = fmaxf(m, x[r * xr + j * xc]);
  float sum = 0.f;
  for (int64_t j = 0; j < n; ++j) sum += expf(x[r * xr + j * xc] - m);
  for (int64_t j = 0; j < n; ++j) y[r * yr + j * yc] = expf(x[r * xr + j * xc] - m) / sum;
}

void launch_some(const KernelCall& call) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes.at(0), n = x.sizes.at(1);
  auto stream = static_cast<cudaStream_t>(call.stream);
  if (n % 5 == 0) write_wild<<<1, 32, 0, stream>>>(y.as<float>());  // BUG: on some shapes
  else if (rows > 0)
    softmax_rows_naive<<<static_cast<unsigned>((rows + 127) / 128), 128, 0, stream>>>(
        x.as<const float>(), y.as<float>(), rows, n, x.strides[0], x.strides[1], y.strides[0],
        y.strides[1]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch(const KernelCall& call) {
  write_wild<<<1, 32, 0, static_cast<cudaStream_t>(call.stream)>>>(call.outputs.at(0).as<float>());
  KGATE_CUDA_CALL(cudaGetLastError());
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_softmax_fault_some";
  k.op = "softmax";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32};
  k.accepts_strided = true;
  k.source = "tests/mutants/softmax_illegal_address.cu";
  k.mutant = true;
  k.expected_catch = "isolation";
  k.launch = launch_some;
  return k;
})());

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "mutant_softmax_illegal_address";
  k.op = "softmax";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32};
  k.source = "tests/mutants/softmax_illegal_address.cu";
  k.mutant = true;
  k.expected_catch = "isolation";
  k.launch = launch;
  return k;
})());

}  // namespace
}  // namespace kgate::mutants
