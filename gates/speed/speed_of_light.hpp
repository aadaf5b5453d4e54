// Speed of light: how a timed median compares with the least time any correct kernel needs to move
// the op's floor of bytes (OpSignature::min_bytes_*) at the device's copy bandwidth. Host-only.
#pragma once

#include <optional>
#include <string>

namespace kgate::speed {

/// A timed case's floor and the device it ran on.
struct LightFloor {
  double read_bytes = 0;           ///< bytes any correct kernel reads
  double written_bytes = 0;        ///< bytes any correct kernel writes
  double ceiling_bytes_per_s = 0;  ///< copy bandwidth, bytes read + written per second
  double l2_bytes = 0;             ///< the device's L2 (writes up to this much may stay in it)
};

/// How far above the copy bandwidth a median may seem before it is "faster than the hardware
/// allows": a streaming copy is not the last word on bandwidth (a read-heavy kernel may beat it by
/// some percent), so the bound is generous; a kernel that skips its work misses it by far more.
inline constexpr double kLightMargin = 1.5;

/// The arm's fraction of the ceiling at `median_ns`: (read + written) / time / ceiling. 0 when
/// there is no floor, ceiling or time.
double light_fraction(const LightFloor& floor, double median_ns);

/// The least time (ns) a cold-cache launch can take: the bytes that must cross DRAM (every read,
/// and the writes that cannot all stay in L2), at kLightMargin x the ceiling. 0 without a floor.
double light_floor_ns(const LightFloor& floor);

/// In cold-cache timing, why `median_ns` of `arm` is faster than the hardware allows (nullopt
/// when it is not, or there is no floor).
std::optional<std::string> faster_than_light(const LightFloor& floor, double median_ns,
                                             const std::string& arm);

}  // namespace kgate::speed
