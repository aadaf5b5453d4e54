// What every CUDA kernel's launcher and registration would otherwise repeat: the switch from a
// call's floating dtype to its C++ element type, and the KernelInfo such a kernel starts from.
//
//   void launch(const KernelCall& call) {
//     dispatch_floating(call.inputs.at(0).dtype, "fused_add_rms_norm_block",
//                       [&](auto t) { run<element_t<decltype(t)>>(call); });
//   }
//   KGATE_REGISTER_KERNEL(([] {
//     KernelInfo k = cuda_kernel("fused_add_rms_norm_block", "fused_add_rms_norm", __FILE__,
//     launch); k.tile_sizes = {256}; return k;
//   })());
// A kernel that has a package needs neither: kgate_add_kernel(NAME PACKAGE dir) runs its manifest's
// launches (runtime/package/compiled_package.hpp).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <functional>
#include <string>
#include <utility>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "runtime/kernel.hpp"

namespace kgate {

/// An element type as a value: what dispatch_floating hands its callable.
template <typename T>
struct TypeTag {
  using type = T;
};
/// The element type a TypeTag stands for: run<element_t<decltype(tag)>>(call).
template <typename Tag>
using element_t = typename Tag::type;

/// Calls fn(TypeTag<float>{}), fn(TypeTag<__half>{}) or fn(TypeTag<__nv_bfloat16>{}) for f32, f16
/// and bf16. Any other dtype is a usage Error naming the kernel, the dtype and the three it takes.
template <typename Fn>
void dispatch_floating(DType dtype, const char* kernel, Fn&& fn) {
  switch (dtype) {
    case DType::f32:
      fn(TypeTag<float>{});
      return;
    case DType::f16:
      fn(TypeTag<__half>{});
      return;
    case DType::bf16:
      fn(TypeTag<__nv_bfloat16>{});
      return;
    default:
      throw Error(ErrorKind::usage, std::string(kernel) + ": dtype " + dtype_name(dtype) +
                                        " is not one it takes (f32, f16, bf16)");
  }
}

/// The KernelInfo of a CUDA kernel over f32, f16 and bf16: its name, op, source file and launcher.
/// Set the rest (tile_sizes, accepts_strided, accepts_unaligned, timed) on the result.
inline KernelInfo cuda_kernel(std::string name, std::string op, std::string source,
                              std::function<void(const KernelCall&)> launch) {
  KernelInfo k;
  k.name = std::move(name);
  k.op = std::move(op);
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32, DType::f16, DType::bf16};
  k.source = std::move(source);
  k.launch = std::move(launch);
  return k;
}

}  // namespace kgate
