// pair_warp_rows: one warp per row, 8 rows per block of 256 threads.
#include "pair_rows.cuh"
#include "runtime/dispatch.hpp"  // dispatch_floating, cuda_kernel
#include "runtime/kernel.hpp"

namespace {

void launch(const kgate::KernelCall& call) {
  kgate::dispatch_floating(call.inputs.at(0).dtype, "pair_warp_rows", [&](auto t) {
    pair::launch_rows_warp<kgate::element_t<decltype(t)>, PAIR_EXTRA_EVERY>(call, 256, "pair_warp_rows");
  });
}

KGATE_REGISTER_KERNEL(([] {
  kgate::KernelInfo k = kgate::cuda_kernel("pair_warp_rows", "l2_normalize", __FILE__, launch);
  k.tile_sizes = {32};
  return k;
})());

}  // namespace
