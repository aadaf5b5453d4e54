// control_rotary_fma: the plain rotary formula of rotary_plain.cuh built with nvcc's default
// --fmad=true (one product of each output fused into a multiply-add). Must pass.
#include "tests/controls/rotary_plain.cuh"

namespace kgate::controls {
namespace {

KGATE_REGISTER_KERNEL(rotary_control("control_rotary_fma", "tests/controls/rotary_fma.cu"));

}  // namespace
}  // namespace kgate::controls
