// The mutants of rotary_block and rotary_interleaved_block, whose right version is its package
// (package_half_split and package_interleaved/, compiled into the build by kgate_add_kernel
// PACKAGE); this launcher is theirs alone. The kernel: rotary position embedding in place, for the
// ops of rotary_embedding.op.json (half-split pairs, j and j + D2) and
// rotary_embedding_interleaved.op.json (pairs 2j, 2j+1; built with ROTARY_INTERLEAVED). One block
// per (token, head); f32, f16 and bf16; any strides. The products are rounded as the eager
// reference rounds them (no fused multiply-add). The half-split build registers two mutants, and
// the interleaved one a third:
//   mutant_rotary_positions_int32    the int64 positions read as int32
//   mutant_rotary_last_position      positions clamped to P-2 (the cache's last row never used)
//   mutant_rotary_interleaved_as_half_split  the interleaved op rotated with half-split pairs
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "kernels/rotary_embedding/package_half_split/rotary_rows.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"
#include "runtime/kernel.hpp"

namespace kgate::kernels {
namespace {

constexpr int kThreads = 128;

template <typename T, bool kInterleaved, int kVariant>
void run(const KernelCall& call) {
  // inputs: q, cos, sin, positions; the output q_out is q's buffer (written in place).
  const TensorView& q = call.outputs.at(0);
  const TensorView& cos = call.inputs.at(1);
  const TensorView& sin = call.inputs.at(2);
  const TensorView& pos = call.inputs.at(3);
  const int64_t tokens = q.sizes[0], heads = q.sizes[1], d2 = q.sizes[2] / 2;
  if (tokens == 0 || d2 == 0) return;
  kgate_device::rotary_rows<T, kInterleaved, kVariant>
      <<<static_cast<unsigned>(tokens * heads), kThreads, 0,
         static_cast<cudaStream_t>(call.stream)>>>(
          q.as<T>(), cos.as<const T>(), sin.as<const T>(), pos.as<const long long>(), heads, d2,
          cos.sizes[0], q.strides[0], q.strides[1], q.strides[2], cos.strides[0], cos.strides[1],
          sin.strides[0], sin.strides[1], pos.strides[0]);
  KGATE_CUDA_CALL(cudaGetLastError());
}

template <bool kInterleaved, int kVariant>
void launch(const KernelCall& call) {
  dispatch_floating(call.inputs.at(0).dtype, "rotary_block",
                    [&](auto t) { run<element_t<decltype(t)>, kInterleaved, kVariant>(call); });
}

KernelInfo info(const char* name, const char* op, void (*fn)(const KernelCall&), bool mutant,
                const char* catches) {
  KernelInfo k = cuda_kernel(name, op, "kernels/rotary_embedding/rotary_block.cu", fn);
  k.tile_sizes = {kThreads};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.mutant = mutant;
  k.expected_catch = catches;
  return k;
}

#ifndef ROTARY_INTERLEAVED
KGATE_REGISTER_KERNEL(info("mutant_rotary_positions_int32", "rotary_embedding", launch<false, 1>,
                           true, "random"));
KGATE_REGISTER_KERNEL(info("mutant_rotary_last_position", "rotary_embedding", launch<false, 2>,
                           true, "random"));
#else
KGATE_REGISTER_KERNEL(info("mutant_rotary_interleaved_as_half_split",
                           "rotary_embedding_interleaved", launch<false, 0>, true, "random"));
#endif

}  // namespace
}  // namespace kgate::kernels
