// control_rotary_nofma: the plain rotary formula of rotary_plain.cuh built with --fmad=false
// (COMPILE_OPTIONS in tests/controls/CMakeLists.txt): both products rounded, as eager rounds
// them. Must pass.
#include "tests/controls/rotary_plain.cuh"

namespace kgate::controls {
namespace {

KGATE_REGISTER_KERNEL(rotary_control("control_rotary_nofma", "tests/controls/rotary_nofma.cu"));

}  // namespace
}  // namespace kgate::controls
