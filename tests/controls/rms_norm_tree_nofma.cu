// control_rms_norm_tree_nofma: rms_norm_tree.cuh built with --fmad=false (COMPILE_OPTIONS in
// tests/controls/CMakeLists.txt), so every square is rounded before it is added: the sum of
// squares of control_rms_norm_tree_fma in the same order (thread, warp tree, block), without
// fused multiply-adds. Must pass.
#include "tests/controls/rms_norm_tree.cuh"

namespace kgate::controls {
namespace {

KGATE_REGISTER_KERNEL(rms_norm_control("control_rms_norm_tree_nofma",
                                       "tests/controls/rms_norm_tree_nofma.cu", launch_tree,
                                       {kTreeThreads}));

}  // namespace
}  // namespace kgate::controls
