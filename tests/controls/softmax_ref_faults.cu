// control_softmax_ref_faults: a correct row softmax (f32, f16, bf16, any strides; float inside,
// one 256-thread block per row: max, sum of exp(x - max), then each exp(x - max) / sum) on the op
// of tests/ops/reference_faults/softmax_ref_faults.op.json, whose reference is broken on purpose:
// it raises on rows of 7 elements and makes a device-side assert on rows of 13. Those cases are
// the reference's errors (faults) and this kernel is right on every other one: kgate must report
// it invalid, never failed (tests/cli/reference_faults_cli.sh checks that on the cpu twin,
// control_softmax_ref_faults_cpu).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "core/error.hpp"
#include "kernels/common/kgate_device.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace kgate::controls {
namespace {

using kgate_device::from_float;
using kgate_device::i64;
using kgate_device::to_float;

constexpr int kThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    softmax_rows(const T* x, T* y, i64 n, i64 xs0, i64 xs1, i64 ys0, i64 ys1) {
  __shared__ float scratch[32];
  const T* xr = x + static_cast<i64>(blockIdx.x) * xs0;
  T* yr = y + static_cast<i64>(blockIdx.x) * ys0;
  float m = -kgate_device::infinity();
  for (i64 c = threadIdx.x; c < n; c += kThreads) m = fmaxf(m, to_float(xr[c * xs1]));
  m = kgate_device::block_reduce<true>(m, scratch);
  // A NaN is not the max (fmaxf), but exp(NaN - m) makes the sum, and so the row, NaN.
  float sum = 0.f;
  for (i64 c = threadIdx.x; c < n; c += kThreads) sum += expf(to_float(xr[c * xs1]) - m);
  sum = kgate_device::block_reduce<false>(sum, scratch);
  for (i64 c = threadIdx.x; c < n; c += kThreads)
    yr[c * ys1] = from_float<T>(expf(to_float(xr[c * xs1]) - m) / sum);
}

template <typename T>
void run(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& y = call.outputs.at(0);
  const int64_t rows = x.sizes.at(0), n = x.sizes.at(1);
  if (rows == 0 || n == 0) return;
  const auto stream = static_cast<cudaStream_t>(call.stream);
  softmax_rows<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      x.as<const T>(), y.as<T>(), n, x.strides[0], x.strides[1], y.strides[0], y.strides[1]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch(const KernelCall& call) {
  dispatch_floating(call.inputs.at(0).dtype, "control_softmax_ref_faults",
                    [&](auto t) { run<element_t<decltype(t)>>(call); });
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k = cuda_kernel("control_softmax_ref_faults", "softmax_ref_faults",
                             "tests/controls/softmax_ref_faults.cu", launch);
  k.tile_sizes = {kThreads};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.timed = false;  // a correctness control, not a deployment candidate
  k.mutant = true;
  k.control = true;
  // Its op's reference fails on some cases by design: the verdict is invalid, not passed, and
  // a fault of the reference ends the CUDA context, so it runs in worker processes (kgate check)
  // and stays out of the one-process GPU suites.
  k.expected_catch = "reference_error";
  return k;
})());

}  // namespace
}  // namespace kgate::controls
