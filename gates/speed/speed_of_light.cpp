#include "gates/speed/speed_of_light.hpp"

#include <algorithm>
#include <cstdio>

namespace kgate::speed {

double light_fraction(const LightFloor& floor, double median_ns) {
  const double bytes = floor.read_bytes + floor.written_bytes;
  if (bytes <= 0 || floor.ceiling_bytes_per_s <= 0 || !(median_ns > 0)) return 0;
  return bytes / (median_ns * 1e-9) / floor.ceiling_bytes_per_s;
}

double light_floor_ns(const LightFloor& floor) {
  if (floor.ceiling_bytes_per_s <= 0) return 0;
  // Cold cache: every read comes from DRAM; written lines may stay in L2 after the kernel ends,
  // up to its size, so only the rest must reach DRAM inside the kernel's time.
  const double bytes = floor.read_bytes + std::max(0.0, floor.written_bytes - floor.l2_bytes);
  return bytes / (kLightMargin * floor.ceiling_bytes_per_s) * 1e9;
}

std::optional<std::string> faster_than_light(const LightFloor& floor, double median_ns,
                                             const std::string& arm) {
  const double least = light_floor_ns(floor);
  if (least <= 0 || !(median_ns > 0) || median_ns >= least) return std::nullopt;
  char text[400];
  std::snprintf(
      text, sizeof text,
      "faster than the hardware allows: %s's median %.3g us moves the op's floor of %.4g MB read + "
      "%.4g MB written at %.2f x the device's copy bandwidth (%.0f GB/s); the cold-cache floor is "
      "%.3g us (%.1f x margin): work skipped, or results kept from earlier launches?",
      arm.c_str(), median_ns * 1e-3, floor.read_bytes * 1e-6, floor.written_bytes * 1e-6,
      light_fraction(floor, median_ns), floor.ceiling_bytes_per_s * 1e-9, least * 1e-3,
      kLightMargin);
  return std::string(text);
}

}  // namespace kgate::speed
