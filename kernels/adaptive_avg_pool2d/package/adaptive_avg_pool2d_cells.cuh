// The device code of adaptive_avg_pool2d_direct: x:[B,C,H,W] -> y:[B,C,OH,OW], any strides.
// Compiled by nvcc into the in-tree kernel
// (adaptive_avg_pool2d_direct, kgate_add_kernel PACKAGE) and by NVRTC as package
// adaptive_avg_pool2d_direct_pkg, so checking the package checks this code. NVRTC-compatible: no
// host headers.
// One thread per output cell (grid-stride): the window rows [floor(i*H/OH), ceil((i+1)*H/OH)) and
// columns [floor(j*W/OW), ceil((j+1)*W/OW)), summed in float row by row, then divided by the
// window's height and width in turn, as ATen's kernel does.
#pragma once

#include "kgate_device.cuh"

namespace kgate_device {

/// Needs H, W >= 1. Strides in elements: xs0..xs3 of x, ys0..ys3 of y.
template <typename T>
__global__ void adaptive_avg_pool2d_cells(const T* __restrict__ x, T* __restrict__ y, i64 b_count,
                                          i64 c_count, i64 h, i64 w, i64 oh_count, i64 ow_count,
                                          i64 xs0, i64 xs1, i64 xs2, i64 xs3, i64 ys0, i64 ys1,
                                          i64 ys2, i64 ys3) {
  const i64 total = b_count * c_count * oh_count * ow_count;
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<i64>(gridDim.x) * blockDim.x) {
    const i64 ow = i % ow_count, oh = (i / ow_count) % oh_count, plane = i / (ow_count * oh_count);
    const i64 c = plane % c_count, b = plane / c_count;
    const i64 h0 = oh * h / oh_count, h1 = ((oh + 1) * h + oh_count - 1) / oh_count;
    const i64 w0 = ow * w / ow_count, w1 = ((ow + 1) * w + ow_count - 1) / ow_count;
    const T* xp = x + b * xs0 + c * xs1;
    float sum = 0.f;
    for (i64 ih = h0; ih < h1; ++ih)
      for (i64 iw = w0; iw < w1; ++iw) sum += to_float(xp[ih * xs2 + iw * xs3]);
    const float avg = sum / static_cast<float>(h1 - h0) / static_cast<float>(w1 - w0);
    y[b * ys0 + c * ys1 + oh * ys2 + ow * ys3] = from_float<T>(avg);
  }
}

}  // namespace kgate_device
