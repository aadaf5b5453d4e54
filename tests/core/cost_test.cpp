// Phase accounting (core/cost.hpp): exclusive time per phase, nested scopes pausing the outer one,
// nothing measured until enabled, and the sync called at each phase's ends.
#include "core/cost.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace kgate {
namespace {

void busy(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
  }
}

TEST(Cost, NestedPhasesAreExclusiveAndAddUp) {
  // (Before enable(): a Scope measures nothing.)
  {
    const cost::Scope off("generate");
    busy(0.01);
  }
  EXPECT_TRUE(cost::take().empty());

  int syncs = 0;
  cost::enable([&syncs] { ++syncs; });
  {
    const cost::Scope outer("other");
    busy(0.02);
    {
      const cost::Scope inner("reference");
      busy(0.05);
    }
    busy(0.02);
  }
  const auto spent = cost::take();
  ASSERT_EQ(spent.count("other"), 1u);
  ASSERT_EQ(spent.count("reference"), 1u);
  EXPECT_NEAR(spent.at("reference"), 0.05, 0.02);
  EXPECT_NEAR(spent.at("other"), 0.04, 0.02);  // the inner phase's time is not the outer's
  EXPECT_EQ(syncs, 4);                         // each scope's two ends
  EXPECT_TRUE(cost::take().empty());           // take() resets

  // An open phase's time so far is taken too, and it goes on from there.
  const cost::Scope open("timing");
  busy(0.01);
  EXPECT_GT(cost::take().at("timing"), 0.005);
  cost::disable();
}

TEST(Cost, TheProcessHasAnAge) {
  // Positive from the first moment (the age when the library loaded, plus the time since), and it
  // grows with the time spent.
  const double first = cost::process_age_s();
  EXPECT_GT(first, 0.0);
  busy(0.05);
  EXPECT_GE(cost::process_age_s(), first + 0.04);
  EXPECT_LT(cost::process_age_s(), 86400.0);
}

}  // namespace
}  // namespace kgate
