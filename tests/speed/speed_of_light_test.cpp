// Speed of light (gates/speed/speed_of_light.hpp) on known figures.
#include "gates/speed/speed_of_light.hpp"

#include <gtest/gtest.h>

namespace kgate::speed {
namespace {

// 4096 x 1024 f32 softmax: 16 MiB read, 16 MiB written, on a 4 TB/s copy with a 50 MB L2.
LightFloor softmax_floor() {
  LightFloor f;
  f.read_bytes = 16.0 * (1 << 20);
  f.written_bytes = 16.0 * (1 << 20);
  f.ceiling_bytes_per_s = 4e12;
  f.l2_bytes = 50e6;
  return f;
}

TEST(SpeedOfLight, FractionIsBytesOverTimeOverCeiling) {
  const LightFloor f = softmax_floor();
  // 33.55 MB in 10 us = 3.355 TB/s = 0.839 of 4 TB/s.
  EXPECT_NEAR(light_fraction(f, 10000), 33554432.0 / 1e-5 / 4e12, 1e-12);
  EXPECT_EQ(light_fraction(f, 0), 0);
  EXPECT_EQ(light_fraction(LightFloor{}, 10000), 0);
}

TEST(SpeedOfLight, WritesThatFitTheL2DoNotCountTowardTheColdFloor) {
  LightFloor f = softmax_floor();
  // Only the 16 MiB read must cross DRAM: 16.78 MB at 1.5 x 4 TB/s = 2.796 us.
  EXPECT_NEAR(light_floor_ns(f), 16777216.0 / 6e12 * 1e9, 1e-6);
  f.written_bytes = 100e6;  // 50 MB of the writes cannot stay in L2
  EXPECT_NEAR(light_floor_ns(f), (16777216.0 + 50e6) / 6e12 * 1e9, 1e-6);
}

TEST(SpeedOfLight, OnlyAMedianBelowTheFloorIsFasterThanTheHardwareAllows) {
  const LightFloor f = softmax_floor();
  const double least = light_floor_ns(f);
  EXPECT_FALSE(faster_than_light(f, least * 1.01, "candidate"));
  EXPECT_FALSE(faster_than_light(f, 12000, "candidate"));  // a good kernel: 0.7 of the ceiling
  const auto why = faster_than_light(f, least * 0.5, "candidate");
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("faster than the hardware allows: candidate's median"), std::string::npos)
      << *why;
  EXPECT_NE(why->find("4000 GB/s"), std::string::npos) << *why;
  // No floor declared, or no ceiling measured: nothing to enforce.
  EXPECT_FALSE(faster_than_light(LightFloor{}, 1, "candidate"));
  LightFloor no_ceiling = f;
  no_ceiling.ceiling_bytes_per_s = 0;
  EXPECT_FALSE(faster_than_light(no_ceiling, 1, "candidate"));
}

}  // namespace
}  // namespace kgate::speed
