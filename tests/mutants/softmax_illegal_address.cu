// Mutant: writes through a wild device pointer (an illegal address). The fault leaves the CUDA
// context unusable, so this kernel must fail alone: `kgate check` runs it in its own worker process
// and keeps every other kernel's results.
#include <cuda_runtime.h>

#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::mutants {
namespace {

__global__ void write_wild(float* y) {
  if (threadIdx.x == 0 && blockIdx.x == 0) y[int64_t{1} << 40] = 1.0f;  // BUG: far outside any allocation
}

void launch(const KernelCall& call) {
  write_wild<<<1, 32, 0, static_cast<cudaStream_t>(call.stream)>>>(call.outputs.at(0).as<float>());
  KGATE_CUDA_CALL(cudaGetLastError());
}

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
