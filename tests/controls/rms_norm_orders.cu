// Controls on rms_norm (built in; y = x * rsqrt(mean(x^2) + eps) * weight over rows of length N),
// f32, f16 and bf16, any strides, each summing the squares in float in another order than eager:
//   control_rms_norm_tree_fma    rms_norm_tree.cuh with the default --fmad=true: per-thread
//                                strided sums (fused multiply-adds), warp shuffle trees, a block
//                                reduction through shared memory
//   control_rms_norm_sequential  one thread per row, the squares summed j = 0..N-1 (fmaf)
// The tree's --fmad=false build is rms_norm_tree_nofma.cu.
#include "tests/controls/rms_norm_tree.cuh"

namespace kgate::controls {
namespace {

constexpr int kRowsPerBlock = 128;

template <typename T>
__global__ void rms_norm_sequential(const T* x, const T* w, T* y, int64_t rows, int64_t n,
                                    float eps, int64_t xs0, int64_t xs1, int64_t ws, int64_t ys0,
                                    int64_t ys1) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const T* xr = x + row * xs0;
  T* yr = y + row * ys0;
  float sum = 0.f;
  for (int64_t j = 0; j < n; ++j) {
    const float v = kgate_device::to_float(xr[j * xs1]);
    sum = fmaf(v, v, sum);
  }
  const float inv_rms = rsqrtf(sum / static_cast<float>(n) + eps);
  for (int64_t j = 0; j < n; ++j)
    yr[j * ys1] = kgate_device::from_float<T>(kgate_device::to_float(xr[j * xs1]) * inv_rms *
                                              kgate_device::to_float(w[j * ws]));
}

template <typename T>
void run_sequential(const KernelCall& call) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& w = call.inputs.at(1);
  const TensorView& y = call.outputs.at(0);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  const auto blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  rms_norm_sequential<T><<<blocks, kRowsPerBlock, 0, static_cast<cudaStream_t>(call.stream)>>>(
      x.as<const T>(), w.as<const T>(), y.as<T>(), rows, n,
      static_cast<float>(call.attributes.at("eps")), x.strides[0], x.strides[1], w.strides[0],
      y.strides[0], y.strides[1]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

void launch_sequential(const KernelCall& call) {
  dispatch_floating(call.inputs.at(0).dtype, "control_rms_norm_sequential",
                    [&](auto t) { run_sequential<element_t<decltype(t)>>(call); });
}

KGATE_REGISTER_KERNEL(rms_norm_control("control_rms_norm_tree_fma",
                                       "tests/controls/rms_norm_orders.cu", launch_tree,
                                       {kTreeThreads}));
KGATE_REGISTER_KERNEL(rms_norm_control("control_rms_norm_sequential",
                                       "tests/controls/rms_norm_orders.cu", launch_sequential, {}));

}  // namespace
}  // namespace kgate::controls
