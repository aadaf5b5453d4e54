// pair_warp_rows: one warp per row, block size / 32 rows per block. The block size comes from a
// file of the build (pair_tuning/warp_block.txt, PAIR_TUNED_WARP_BLOCK), read at run time, as an
// autotuned configuration is: a launch configuration from outside the kernel's module, so two
// builds that differ only there have the same module code and launch differently.
#include <dlfcn.h>

#include <filesystem>
#include <fstream>

#include "pair_rows.cuh"
#include "runtime/dispatch.hpp"  // dispatch_floating, cuda_kernel
#include "runtime/kernel.hpp"

namespace {

int tuned_block() {
  static const int block = [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&tuned_block), &info) == 0 || !info.dli_fname) return 256;
    // The main program is named as it was run (kgate's workers: argv[0], perhaps no path at all):
    // /proc/self/exe names it then.
    std::error_code ec;
    std::filesystem::path self = info.dli_fname;
    if (self.empty() || self.is_relative())
      self = std::filesystem::read_symlink("/proc/self/exe", ec);
    self = std::filesystem::canonical(self, ec);
    // The module (BUILD/kgate-modules/) or the kgate program (BUILD/bin/): BUILD/pair_tuning/.
    std::ifstream in(self.parent_path().parent_path() / "pair_tuning" / "warp_block.txt");
    int b = 0;
    return in >> b && b >= 32 && b <= 1024 && b % 32 == 0 ? b : 256;
  }();
  return block;
}

void launch(const kgate::KernelCall& call) {
  kgate::dispatch_floating(call.inputs.at(0).dtype, "pair_warp_rows", [&](auto t) {
    pair::launch_rows_warp<kgate::element_t<decltype(t)>>(call, tuned_block(), "pair_warp_rows",
                                                          PAIR_EXTRA_EVERY);
  });
}

KGATE_REGISTER_KERNEL(([] {
  kgate::KernelInfo k = kgate::cuda_kernel("pair_warp_rows", "l2_normalize", __FILE__, launch);
  k.tile_sizes = {32};
  return k;
})());

}  // namespace
