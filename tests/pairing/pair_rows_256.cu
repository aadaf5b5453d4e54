// pair_rows_256: one block per row, PAIR_BLOCK threads (256; PAIR_BLOCK_PAIR_ROWS_256 sets it). The
// block size is the host launcher's alone: the device code is the same at any.
#include "pair_rows.cuh"
#include "runtime/dispatch.hpp"  // dispatch_floating, cuda_kernel
#include "runtime/kernel.hpp"

#ifndef PAIR_BLOCK
#define PAIR_BLOCK 256
#endif

namespace {

void launch(const kgate::KernelCall& call) {
  kgate::dispatch_floating(call.inputs.at(0).dtype, "pair_rows_256", [&](auto t) {
    pair::launch_rows_block<kgate::element_t<decltype(t)>>(call, PAIR_BLOCK, "pair_rows_256",
                                                           PAIR_EXTRA_EVERY, PAIR_SPIN_CYCLES);
  });
}

KGATE_REGISTER_KERNEL(([] {
  kgate::KernelInfo k = kgate::cuda_kernel("pair_rows_256", "l2_normalize", __FILE__, launch);
  k.tile_sizes = {PAIR_BLOCK};
  return k;
})());

}  // namespace
