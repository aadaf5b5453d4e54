// pair_rows_1024: one block of 1024 threads per row.
#include "pair_rows.cuh"
#include "runtime/dispatch.hpp"  // dispatch_floating, cuda_kernel
#include "runtime/kernel.hpp"

namespace {

void launch(const kgate::KernelCall& call) {
  kgate::dispatch_floating(call.inputs.at(0).dtype, "pair_rows_1024", [&](auto t) {
    pair::launch_rows_block<kgate::element_t<decltype(t)>>(call, 1024, "pair_rows_1024",
                                                           PAIR_EXTRA_EVERY, PAIR_SPIN_CYCLES);
  });
}

KGATE_REGISTER_KERNEL(([] {
  kgate::KernelInfo k = kgate::cuda_kernel("pair_rows_1024", "l2_normalize", __FILE__, launch);
  k.tile_sizes = {1024};
  return k;
})());

}  // namespace
