// The host side of the GELU kernels over x:[B,N] shared by gelu_elementwise (exact) and
// gelu_tanh_elementwise (tanh), float math: which kernels to launch for a call. Contiguous x and
// y: a flat grid-stride loop, with 16-byte vector accesses when both start 16-byte aligned (the
// remainder scalar); otherwise any strides, scalar accesses. The device code lives in
// package_gelu_elementwise/gelu_kernels.cuh, shared with the packages gelu_elementwise_pkg and
// gelu_tanh_elementwise_pkg (their kgate.json describe this dispatch).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "kernels/common/elementwise.cuh"
#include "kernels/gelu/package_gelu_elementwise/gelu_kernels.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels::gelu_detail {

template <typename T, bool kTanh>
void run(const KernelCall& call, const char* name) {
  const TensorView& x = call.inputs.at(0);
  const TensorView& y = call.outputs.at(0);
  if (x.dim() != 2 || y.dim() != 2)
    throw Error(ErrorKind::usage, std::string(name) + ": expects x:[B,N], y:[B,N]");
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  auto stream = static_cast<cudaStream_t>(call.stream);
  const int64_t total = rows * n;
  if (x.is_contiguous() && y.is_contiguous()) {
    int64_t done = 0;
    if (aligned16(x.data) && aligned16(y.data)) {
      constexpr int64_t kN = kgate_device::Vec16<T>::kN;
      const int64_t vectors = total / kN;
      if (vectors > 0)
        kgate_device::gelu_vec16<T, kTanh>
            <<<elementwise_blocks(vectors), kElementwiseThreads, 0, stream>>>(x.as<const T>(),
                                                                              y.as<T>(), vectors);
      done = vectors * kN;
    }
    if (done < total)
      kgate_device::gelu_flat<T, kTanh>
          <<<elementwise_blocks(total - done), kElementwiseThreads, 0, stream>>>(
              x.as<const T>(), y.as<T>(), done, total);
  } else {
    kgate_device::gelu_rows<T, kTanh>
        <<<elementwise_blocks(total), kElementwiseThreads, 0, stream>>>(
            x.as<const T>(), y.as<T>(), rows, n, x.strides[0], x.strides[1], y.strides[0],
            y.strides[1]);
  }
  KGATE_CUDA_CALL(cudaGetLastError());
}

/// Runs the kernel on the call's dtype.
template <bool kTanh>
void launch(const KernelCall& call, const char* name) {
  dispatch_floating(call.inputs.at(0).dtype, name,
                    [&](auto t) { run<element_t<decltype(t)>, kTanh>(call, name); });
}

}  // namespace kgate::kernels::gelu_detail
