// Unit tests of checked timing's two arms (gates/speed/checked_arms) with a fake launch timer and a
// fake device monitor: which launch of a block is checked, that its hooks run around it, and the
// three things that make a comparison INVALID (kernels that change while timed, a module loaded
// while timed, another process on the device), plus throttled blocks and the clock range.
#include "gates/speed/checked_arms.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <string>
#include <vector>

namespace kgate::speed {
namespace {

/// Runs each launch with `between` first, as the CUPTI timer does; every launch takes 1000 ns and
/// starts the kernels `kernels[arm]` unless `changed_after` launches have run (then "other").
class FakeTimer : public LaunchTimer {
 public:
  std::vector<double> time(const std::function<void()>& launch, int count,
                           const std::function<void()>& between) override {
    last_.clear();
    for (int i = 0; i < count; ++i) {
      if (between) between();
      launch();
      ++launches;
      last_.push_back(changed_after >= 0 && launches > changed_after ? KernelSet{"other<<<1, 1>>>"}
                                                                     : KernelSet{"k<<<1, 32>>>"});
    }
    return std::vector<double>(static_cast<size_t>(count), 1000.0);
  }
  const char* name() const override { return "fake"; }
  const std::vector<KernelSet>& launch_kernels() const override { return last_; }
  int module_loads() const override { return loads; }

  int64_t launches = 0;
  int64_t changed_after = -1;
  int loads = 0;

 private:
  std::vector<KernelSet> last_;
};

class FakeMonitor : public DeviceMonitor {
 public:
  std::optional<DeviceSample> sample() const override {
    ++samples;
    return DeviceSample{clock, throttled, throttled ? "thermal slowdown" : ""};
  }
  std::optional<std::vector<DeviceUser>> other_processes() const override {
    return others ? std::vector<DeviceUser>{{4242, uint64_t{300} << 20}}
                  : std::vector<DeviceUser>{};
  }
  unsigned clock = 1980;
  bool throttled = false;
  bool others = false;
  mutable int samples = 0;
};

struct Trace {
  std::vector<std::string> events;
  int blocks_judged = 0;
};

CheckedArms::Hooks hooks(Trace& t) {
  CheckedArms::Hooks h;
  h.launch = [&t](int arm, size_t set) {
    t.events.push_back("launch " + std::to_string(arm) + "/" + std::to_string(set));
  };
  h.prepare = [&t](int arm, size_t set) {
    t.events.push_back("prepare " + std::to_string(arm) + "/" + std::to_string(set));
  };
  h.capture = [&t](int arm, size_t set) {
    t.events.push_back("capture " + std::to_string(arm) + "/" + std::to_string(set));
  };
  h.block_done = [&t](int64_t, const std::array<int64_t, 2>&, bool) { ++t.blocks_judged; };
  return h;
}

// A fixed random source: every draw returns `v` (the check index is v % launches per block).
std::function<uint64_t()> fixed(uint64_t v) {
  return [v] { return v; };
}

TEST(CheckedArms, ChecksTheDrawnLaunchOfEachArmBetweenLaunches) {
  FakeTimer timer;
  Trace t;
  // Two buffer sets, 10 launches per block (5 per half-block), draws of 7: launch 7 of each arm.
  CheckedArms arms(timer, 2, 3, 10, {true, true}, hooks(t), nullptr, {"base", "head"}, fixed(7));
  arms.measure(0, 10);  // warm-up: no checks
  EXPECT_EQ(std::count_if(t.events.begin(), t.events.end(),
                          [](const std::string& e) { return e[0] == 'p'; }),
            0);
  arms.begin_blocks(true);
  t.events.clear();
  arms.measure(0, 5);
  arms.measure(1, 5);
  arms.measure(1, 5);
  arms.measure(0, 5);
  EXPECT_FALSE(arms.block_disturbance());
  arms.block_done();
  // Each arm's 8th launch (index 7, set 1) is prepared just before and captured right after it.
  for (int arm = 0; arm < 2; ++arm) {
    const std::string a = std::to_string(arm);
    const auto prepare = std::find(t.events.begin(), t.events.end(), "prepare " + a + "/1");
    ASSERT_NE(prepare, t.events.end()) << a;
    EXPECT_EQ(*(prepare + 1), "launch " + a + "/1");
    EXPECT_EQ(*(prepare + 2), "capture " + a + "/1");
    EXPECT_EQ(std::count(t.events.begin(), t.events.end(), "prepare " + a + "/1"), 1);
  }
  EXPECT_EQ(t.blocks_judged, 1);
  ASSERT_EQ(arms.checked_launches().size(), 2u);
  EXPECT_EQ(arms.checked_launches()[0].launch, 7);
  EXPECT_EQ(arms.kernels(1), (KernelSet{"k<<<1, 32>>>"}));
}

TEST(CheckedArms, OutputsAreRefilledBeforeEveryLaunchButTheCheckedOneWhichIsPrepared) {
  FakeTimer timer;
  Trace t;
  CheckedArms::Hooks h = hooks(t);
  h.refill = [&t](int arm, size_t set) {
    t.events.push_back("refill " + std::to_string(arm) + "/" + std::to_string(set));
  };
  CheckedArms arms(timer, 2, 3, 10, {true, true}, h, nullptr, {"base", "head"}, fixed(7));
  arms.measure(1, 10);  // warm-up: every launch refilled
  for (size_t i = 0; i < t.events.size(); i += 2) {
    EXPECT_EQ(t.events[i], "refill 1/" + std::to_string(i / 2 % 2));
    EXPECT_EQ(t.events[i + 1], "launch 1/" + std::to_string(i / 2 % 2));
  }
  EXPECT_EQ(t.events.size(), 20u);
  arms.begin_blocks(true);
  t.events.clear();
  arms.measure(0, 5);
  arms.measure(1, 5);
  arms.measure(1, 5);
  arms.measure(0, 5);
  // 20 launches: 18 refilled, the two checked ones (index 7 of each arm) prepared instead.
  const auto count = [&](char first) {
    return std::count_if(t.events.begin(), t.events.end(),
                         [&](const std::string& e) { return e[0] == first; });
  };
  EXPECT_EQ(count('l'), 20);
  EXPECT_EQ(count('r'), 18);
  EXPECT_EQ(count('p'), 2);
  for (size_t i = 0; i + 1 < t.events.size(); ++i)
    if (t.events[i][0] == 'l') {
      ASSERT_GT(i, 0u);
      const char before = t.events[i - 1][0];
      EXPECT_TRUE(before == 'r' || before == 'p')
          << "launch " << i << " came after " << t.events[i - 1];
    }
}

TEST(CheckedArms, TheBaselineIsCheckedInBlockZeroAndAQuarterOfTheRest) {
  FakeTimer timer;
  Trace t;
  // Draws of 1: (1 & 3) != 0, so after block 0 the baseline is never checked; the candidate always.
  CheckedArms arms(timer, 1, 2, 4, {true, true}, hooks(t), nullptr, {"base", "head"}, fixed(1));
  arms.begin_blocks(true);
  for (int block = 0; block < 3; ++block) {
    arms.measure(0, 2);
    arms.measure(1, 4);
    arms.measure(0, 2);
    arms.block_disturbance();
    arms.block_done();
  }
  int base = 0, head = 0;
  for (const auto& c : arms.checked_launches()) (c.arm == 0 ? base : head) += 1;
  EXPECT_EQ(base, 1);
  EXPECT_EQ(head, 3);
}

TEST(CheckedArms, KernelsThatChangeWhileTimedMakeItInvalid) {
  FakeTimer timer;
  Trace t;
  CheckedArms arms(timer, 1, 2, 10, {false, true}, hooks(t), nullptr, {"eager", "head"}, fixed(0));
  arms.measure(1, 10);  // warm-up learns k<<<1, 32>>>
  arms.begin_blocks(false);
  timer.changed_after = timer.launches + 3;
  try {
    arms.measure(1, 5);
    FAIL() << "no TimingInvalid";
  } catch (const TimingInvalid& e) {
    EXPECT_NE(e.reason.find("the kernels of a timed launch changed"), std::string::npos)
        << e.reason;
    EXPECT_NE(e.reason.find("'head'"), std::string::npos) << e.reason;
    EXPECT_NE(e.reason.find("other<<<1, 1>>>"), std::string::npos) << e.reason;
  }
}

TEST(CheckedArms, AModuleLoadedWhileTimedMakesItInvalid) {
  FakeTimer timer;
  Trace t;
  CheckedArms arms(timer, 1, 2, 10, {false, true}, hooks(t), nullptr, {"eager", "head"}, fixed(0));
  timer.loads = 1;
  arms.measure(1, 5);  // warm-up: loads are expected there
  arms.begin_blocks(false);
  EXPECT_THROW(arms.measure(1, 5), TimingInvalid);
}

TEST(CheckedArms, TheMonitorDropsThrottledBlocksAndRefusesASharedDevice) {
  FakeTimer timer;
  FakeMonitor monitor;
  Trace t;
  CheckedArms arms(timer, 1, 2, 10, {false, true}, hooks(t), &monitor, {"eager", "head"}, fixed(0));
  EXPECT_FALSE(arms.block_disturbance());  // warm-up: the monitor is not read
  EXPECT_EQ(monitor.samples, 0);
  arms.begin_blocks(false);
  EXPECT_FALSE(arms.block_disturbance());
  monitor.throttled = true;
  monitor.clock = 1410;
  const auto d = arms.block_disturbance();
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, "thermal slowdown");
  EXPECT_EQ(arms.clock_range(), std::make_pair(1410u, 1980u));
  monitor.others = true;
  try {
    arms.block_disturbance();
    FAIL() << "no TimingInvalid";
  } catch (const TimingInvalid& e) {
    EXPECT_NE(e.reason.find("pid 4242 (300 MiB)"), std::string::npos) << e.reason;
  }
}

}  // namespace
}  // namespace kgate::speed
