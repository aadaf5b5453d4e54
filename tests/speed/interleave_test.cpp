// Unit tests of the interleaved A/B runner (gates/speed/interleave) with fake timers, and
// simulations of the whole speed gate on a synthetic GPU: power at known slowdowns, the A/A
// false-positive rate, and robustness to slow drift. Every simulation is seeded, so each figure is
// reproducible.
#include "gates/speed/interleave.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace kgate::speed {
namespace {

using speed::Decision;

// ----------------------------------------------------------------------------------------------
// Fake timers for the runner's mechanics.

/// Returns constant per-launch times; costs `seconds_per_launch` of budget per launch. Optionally
/// drops every `drop_every`-th block (1-based) as "thermal throttle".
class ConstantTimer : public ArmTimer {
 public:
  ConstantTimer(double a_ns, double b_ns) : ns_{a_ns, b_ns} {}
  std::vector<double> measure(int arm, int launches) override {
    arms.push_back(arm);
    seconds_ += seconds_per_launch * launches;
    return std::vector<double>(launches, ns_[arm]);
  }
  std::optional<std::string> block_disturbance() override {
    ++blocks;
    if (drop_every > 0 && blocks % drop_every == 0) return "thermal throttle (SM clock 1410 MHz)";
    return std::nullopt;
  }
  double seconds_used() const override { return seconds_; }

  void block_done() override {
    ++done;
    EXPECT_EQ(done, blocks) << "block_done() comes once per block, after block_disturbance()";
    if (throw_at_block > 0 && done == throw_at_block) throw std::runtime_error("wrong while timed");
  }

  double seconds_per_launch = 1e-5;
  int drop_every = 0;
  int throw_at_block = 0;
  std::vector<int> arms;  ///< every measure() call's arm, in order
  int blocks = 0;         ///< block_disturbance() calls
  int done = 0;           ///< block_done() calls

 private:
  double ns_[2];
  double seconds_ = 0;
};

/// An arm whose batch medians never settle: each batch is 30% slower or faster than the last.
class UnsettledTimer : public ArmTimer {
 public:
  std::vector<double> measure(int arm, int launches) override {
    seconds_ += seconds_per_launch * launches;
    if (arm == 1) ++batches;
    return std::vector<double>(launches, arm == 1 && batches % 2 == 0 ? 130.0 : 100.0);
  }
  double seconds_used() const override { return seconds_; }
  double seconds_per_launch =
      0.065;  // a 65 ms launch (a slow kernel, or a cpu kernel on a big case)
  int batches = 0;

 private:
  double seconds_ = 0;
};

TEST(WarmUp, EndsWhenBothArmsSettle) {
  ConstantTimer timer(100, 200);
  EXPECT_EQ(speed::warm_up(timer, 20, 100.0), 2);  // the second batch matches the first
  EXPECT_EQ(timer.arms, (std::vector<int>{0, 1, 0, 1}));
}

TEST(WarmUp, AnArmThatNeverSettlesStopsAtItsShareOfTheBudget) {
  UnsettledTimer slow;  // 20 launches of 65 ms a batch: 1.3 s
  EXPECT_EQ(speed::warm_up(slow, 20, 5.0), 4) << "5.2 s used after 4 batches, 3.9 s after 3";
  UnsettledTimer slower;
  EXPECT_EQ(speed::warm_up(slower, 20, 0.5), 2)
      << "never fewer than two batches, whatever the share";
  UnsettledTimer fast;
  fast.seconds_per_launch = 1e-5;  // 10 us launches: the batch cap ends it long before the share
  EXPECT_EQ(speed::warm_up(fast, 20, 0.75), 20);
}

/// Candidate/baseline ratio alternates per block between (1+delta)e^{+0.01} and (1+delta)e^{-0.01}:
/// the median log ratio sits exactly on the threshold, so no look can ever decide.
class OnTheThresholdTimer : public ArmTimer {
 public:
  explicit OnTheThresholdTimer(double delta) : delta_(delta) {}
  std::vector<double> measure(int arm, int launches) override {
    seconds_ += 1e-5 * launches;
    const double b = 1000 * (1 + delta_) * std::exp(blocks_ % 2 ? 0.01 : -0.01);
    return std::vector<double>(launches, arm == 0 ? 1000.0 : b);
  }
  std::optional<std::string> block_disturbance() override {
    ++blocks_;
    return std::nullopt;
  }
  double seconds_used() const override { return seconds_; }

 private:
  double delta_;
  int blocks_ = 0;
  double seconds_ = 0;
};

/// Returns a bad sample in chosen blocks: 0 ns, NaN, a negative time, or too few samples.
class FaultyTimer : public ArmTimer {
 public:
  std::vector<double> measure(int arm, int launches) override {
    seconds_ += 1e-5 * launches;
    std::vector<double> t(launches, 1000.0);
    if (arm == 1) {
      if (block_ == 3) t[1] = 0.0;
      if (block_ == 7) t[0] = std::nan("");
      if (block_ == 11) t[2] = -5.0;
      if (block_ == 13) t.pop_back();
    }
    return t;
  }
  std::optional<std::string> block_disturbance() override {
    ++block_;
    return std::nullopt;
  }
  double seconds_used() const override { return seconds_; }

 private:
  int block_ = 0;
  double seconds_ = 0;
};

TEST(Interleave, BlocksAreCounterbalancedAndRandomized) {
  ConstantTimer timer(1000, 1000);
  InterleaveOptions options;
  options.max_stages = 1;
  options.blocks_per_stage = 200;
  Rng rng(1);
  const InterleaveResult r = run_interleaved(timer, options, rng);
  ASSERT_EQ(r.blocks.size(), 200u);
  ASSERT_EQ(timer.arms.size(), 800u);
  EXPECT_EQ(timer.blocks, 200);
  int baseline_first = 0;
  for (size_t i = 0; i < r.blocks.size(); ++i) {
    const int* arms = &timer.arms[4 * i];
    const int first = r.blocks[i].baseline_first ? 0 : 1;
    EXPECT_EQ(arms[0], first);  // A B B A or B A A B
    EXPECT_EQ(arms[1], 1 - first);
    EXPECT_EQ(arms[2], 1 - first);
    EXPECT_EQ(arms[3], first);
    EXPECT_EQ(r.blocks[i].a.size(), 2u * options.launches_per_arm);
    EXPECT_EQ(r.blocks[i].b.size(), 2u * options.launches_per_arm);
    baseline_first += r.blocks[i].baseline_first;
  }
  // A fair coin: 200 flips within 100 +- 30 (4.2 standard deviations).
  EXPECT_GT(baseline_first, 70);
  EXPECT_LT(baseline_first, 130);
}

TEST(Interleave, DeterministicGivenSeed) {
  InterleaveOptions options;
  auto run = [&](uint64_t seed) {
    ConstantTimer timer(1000, 1000);
    Rng rng(seed);
    return run_interleaved(timer, options, rng);
  };
  const InterleaveResult r1 = run(42), r2 = run(42), r3 = run(43);
  ASSERT_EQ(r1.blocks.size(), r2.blocks.size());
  bool same_as_other_seed = r1.blocks.size() == r3.blocks.size();
  for (size_t i = 0; i < r1.blocks.size(); ++i) {
    EXPECT_EQ(r1.blocks[i].baseline_first, r2.blocks[i].baseline_first);
    if (i < r3.blocks.size()) {
      same_as_other_seed &= r1.blocks[i].baseline_first == r3.blocks[i].baseline_first;
    }
  }
  EXPECT_FALSE(same_as_other_seed);
}

TEST(Interleave, EveryBlockEndsWithBlockDoneWhichMayEndTheRun) {
  ConstantTimer timer(1000, 1000);
  InterleaveOptions options;
  Rng rng(5);
  const InterleaveResult r = run_interleaved(timer, options, rng);
  EXPECT_EQ(timer.done, static_cast<int>(r.blocks.size()));
  // A checked timed launch that fails ends the run there (the caller reports it).
  ConstantTimer failing(1000, 1000);
  failing.throw_at_block = 3;
  Rng rng2(5);
  EXPECT_THROW(run_interleaved(failing, options, rng2), std::runtime_error);
  EXPECT_EQ(failing.done, 3);
  EXPECT_EQ(failing.arms.size(), 12u);  // 3 blocks x 4 half-blocks, nothing after
}

TEST(Interleave, BigEffectStopsAtTheFirstLook) {
  ConstantTimer timer(1000, 1100);  // 10% slower, no noise
  InterleaveOptions options;
  Rng rng(2);
  const InterleaveResult r = run_interleaved(timer, options, rng);
  EXPECT_EQ(r.decision.decision, Decision::regression);
  EXPECT_EQ(r.stages, 1);
  EXPECT_EQ(r.blocks.size(), static_cast<size_t>(options.blocks_per_stage));
  EXPECT_LT(r.blocks.size(), static_cast<size_t>(options.blocks_per_stage * options.max_stages));
  EXPECT_DOUBLE_EQ(r.alpha_last_stage, options.alpha / options.max_stages);
  for (const Block& block : r.blocks) EXPECT_DOUBLE_EQ(block.log_ratio, std::log(1.1));
  EXPECT_FALSE(r.invalid);
  EXPECT_NEAR(r.seconds, 30 * 20 * 1e-5, 1e-12);
}

TEST(Interleave, NoEffectRunsOutOfStages) {
  InterleaveOptions options;
  OnTheThresholdTimer timer(options.delta);
  Rng rng(3);
  const InterleaveResult r = run_interleaved(timer, options, rng);
  EXPECT_EQ(r.decision.decision, Decision::inconclusive);
  EXPECT_EQ(r.stages, options.max_stages);
  EXPECT_EQ(r.blocks.size(), static_cast<size_t>(options.blocks_per_stage * options.max_stages));
  EXPECT_EQ(r.decision.n, options.blocks_per_stage * options.max_stages);
  EXPECT_FALSE(r.invalid);
}

TEST(Interleave, FillBudgetGrowsLaterStagesToSpendTheBudget) {
  // 20 launches of 10 us per block (2e-4 s) and a 0.1 s budget, never decided: 30 blocks, then each
  // later stage sized for the budget left over the looks left (0.094 s / 2e-4 s / 3 = 156, ...).
  InterleaveOptions options;
  options.time_budget_s = 0.1;
  options.fill_budget = true;
  OnTheThresholdTimer timer(options.delta);
  Rng rng(3);
  const InterleaveResult r = run_interleaved(timer, options, rng);
  EXPECT_EQ(r.decision.decision, Decision::inconclusive);
  EXPECT_EQ(r.stages, options.max_stages);
  EXPECT_GE(r.blocks.size(), 480u);  // 0.1 s of 2e-4 s blocks, less what rounding down leaves
  EXPECT_LE(r.blocks.size(), 500u);
  EXPECT_LE(r.seconds, options.time_budget_s + 2e-4);
  // Off: four stages of 30, the budget mostly unspent.
  options.fill_budget = false;
  OnTheThresholdTimer fixed(options.delta);
  Rng rng2(3);
  EXPECT_EQ(run_interleaved(fixed, options, rng2).blocks.size(), 120u);
  // A budget that would allow more than max_stage_growth x blocks_per_stage per stage is capped.
  options.fill_budget = true;
  options.time_budget_s = 100;
  OnTheThresholdTimer capped(options.delta);
  Rng rng3(3);
  EXPECT_EQ(run_interleaved(capped, options, rng3).blocks.size(),
            static_cast<size_t>(30 + 3 * 16 * 30));
  options.max_stage_growth = 0;
  EXPECT_THROW(run_interleaved(capped, options, rng3), Error);
}

TEST(Interleave, TimeBudgetEndsTheRunInconclusive) {
  // 0.2 s per block (20 launches of 10 ms) and a 1 s budget: 5 blocks, too few for any bound at
  // alpha / 4 (2^-5 > 0.0125), so even a 10% slowdown stays inconclusive.
  ConstantTimer timer(1000, 1100);
  timer.seconds_per_launch = 0.01;
  InterleaveOptions options;
  options.time_budget_s = 1.0;
  Rng rng(4);
  const InterleaveResult r = run_interleaved(timer, options, rng);
  EXPECT_EQ(r.blocks.size(), 5u);
  EXPECT_EQ(r.stages, 1);
  EXPECT_EQ(r.decision.decision, Decision::inconclusive);
  EXPECT_TRUE(std::isinf(r.decision.lower));
  EXPECT_NEAR(r.seconds, 1.0, 1e-9);

  // Budget spent in the middle of stage 2: the look is taken early on the blocks so far.
  options.blocks_per_stage = 10;
  options.time_budget_s = 2.5;
  OnTheThresholdTimer on_threshold(options.delta);
  ConstantTimer slow(1000, 1000);
  slow.seconds_per_launch = 0.01;
  struct Both : ArmTimer {
    OnTheThresholdTimer* values;
    ConstantTimer* clock;
    std::vector<double> measure(int arm, int n) override {
      clock->measure(arm, n);
      return values->measure(arm, n);
    }
    std::optional<std::string> block_disturbance() override { return values->block_disturbance(); }
    double seconds_used() const override { return clock->seconds_used(); }
  } both;
  both.values = &on_threshold;
  both.clock = &slow;
  const InterleaveResult r2 = run_interleaved(both, options, rng);
  EXPECT_EQ(r2.blocks.size(), 13u);  // 13 * 0.2 s >= 2.5 s
  EXPECT_EQ(r2.stages, 2);
  EXPECT_EQ(r2.decision.decision, Decision::inconclusive);
  EXPECT_DOUBLE_EQ(r2.alpha_last_stage, options.alpha / options.max_stages);
}

TEST(Interleave, TheBudgetNeverStopsARunBeforeItCanDecide) {
  // The same 1 s budget and 0.2 s blocks, a 20x slowdown: with min_blocks (what alpha / 4 and a
  // run's Holm correction need) the run goes on to 7 blocks and decides.
  EXPECT_EQ(speed::min_blocks_to_decide(0.05, 4, 3), 7);    // 2^-7 <= 0.0125
  EXPECT_EQ(speed::min_blocks_to_decide(0.05, 4, 54), 11);  // 2^-11 <= 0.05 / 54 < 2^-10
  EXPECT_EQ(speed::min_blocks_to_decide(0.05, 1, 1), 5);
  ConstantTimer timer(1000, 20000);
  timer.seconds_per_launch = 0.01;
  InterleaveOptions options;
  options.time_budget_s = 1.0;
  options.min_blocks = speed::min_blocks_to_decide(options.alpha, options.max_stages, 3);
  Rng rng(4);
  const InterleaveResult r = run_interleaved(timer, options, rng);
  EXPECT_EQ(r.blocks.size(), 7u);
  EXPECT_EQ(r.decision.decision, Decision::regression);
  EXPECT_EQ(r.budget_needed_s, 0);

  // Blocks of 4 s against a 0.1 s budget: the hard cap (10x the budget) stops the run short of
  // min_blocks; the result says what budget would do.
  ConstantTimer slow(1000, 20000);
  slow.seconds_per_launch = 0.2;
  options.time_budget_s = 0.1;
  Rng rng2(4);
  const InterleaveResult capped = run_interleaved(slow, options, rng2);
  EXPECT_EQ(capped.blocks.size(), 1u);
  EXPECT_EQ(capped.decision.decision, Decision::inconclusive);
  EXPECT_NEAR(capped.budget_needed_s, 4.0 * 7 * 1.2, 1e-9);
}

TEST(Interleave, TooManyDroppedBlocksIsInvalidNeverPass) {
  ConstantTimer timer(1000, 1000);  // identical arms: would clearly PASS at delta 2%
  timer.drop_every = 3;             // 10 of 30 blocks dropped = 33% > 20%
  InterleaveOptions options;
  Rng rng(5);
  const InterleaveResult r = run_interleaved(timer, options, rng);
  EXPECT_TRUE(r.invalid);
  EXPECT_NE(r.invalid_reason.find("10 of 30 blocks dropped"), std::string::npos)
      << r.invalid_reason;
  EXPECT_NE(r.invalid_reason.find("thermal throttle"), std::string::npos) << r.invalid_reason;
  EXPECT_NE(r.decision.decision, Decision::pass);
  EXPECT_EQ(r.blocks.size(), 30u);  // dropped blocks are kept for the report
  EXPECT_EQ(r.decision.n, 20);
}

TEST(Interleave, FewDroppedBlocksAreExcludedButValid) {
  ConstantTimer timer(1000, 1000);
  timer.drop_every = 10;  // 3 of 30 = 10% <= 20%
  InterleaveOptions options;
  Rng rng(6);
  const InterleaveResult r = run_interleaved(timer, options, rng);
  EXPECT_FALSE(r.invalid) << r.invalid_reason;
  EXPECT_EQ(r.decision.decision, Decision::pass);
  EXPECT_EQ(r.decision.n, 27);
  int dropped = 0;
  for (const Block& block : r.blocks) dropped += block.dropped.has_value();
  EXPECT_EQ(dropped, 3);
  ASSERT_TRUE(r.blocks[9].dropped.has_value());
  EXPECT_EQ(*r.blocks[9].dropped, "thermal throttle (SM clock 1410 MHz)");
}

TEST(Interleave, BadSamplesDropTheirBlockWithAReason) {
  FaultyTimer timer;
  InterleaveOptions options;
  Rng rng(7);
  const InterleaveResult r = run_interleaved(timer, options, rng);
  ASSERT_GE(r.blocks.size(), 14u);
  const auto reason = [&](size_t i) { return r.blocks[i].dropped.value_or("(kept)"); };
  EXPECT_NE(reason(3).find("candidate sample is not positive (0 ns)"), std::string::npos)
      << reason(3);
  EXPECT_NE(reason(7).find("not finite"), std::string::npos) << reason(7);
  EXPECT_NE(reason(11).find("not positive (-5 ns)"), std::string::npos) << reason(11);
  EXPECT_NE(reason(13).find("returned 4 samples, expected 5"), std::string::npos) << reason(13);
  EXPECT_FALSE(r.blocks[0].dropped.has_value());
  EXPECT_FALSE(r.invalid);  // 4 of 30 <= 20%
  EXPECT_EQ(r.decision.n, 26);
  EXPECT_EQ(r.decision.decision, Decision::pass);
}

TEST(Interleave, RejectsUnusableOptions) {
  ConstantTimer timer(1000, 1000);
  Rng rng(8);
  InterleaveOptions options;
  options.launches_per_arm = 0;
  EXPECT_THROW(run_interleaved(timer, options, rng), Error);
  options = InterleaveOptions{};
  options.alpha = 0.7;
  EXPECT_THROW(run_interleaved(timer, options, rng), Error);
  options = InterleaveOptions{};
  options.max_stages = 0;
  EXPECT_THROW(run_interleaved(timer, options, rng), Error);
}

// ----------------------------------------------------------------------------------------------
// Simulations on a synthetic GPU.

/// Standard normal deviates by the Box-Muller transform (both values of each pair used).
class Normal {
 public:
  explicit Normal(uint64_t seed) : rng_(seed) {}
  double operator()() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = 1.0 - rng_.uniform();  // (0, 1]: log is finite
    const double u2 = rng_.uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2 * 3.14159265358979323846 * u2);
    has_spare_ = true;
    return r * std::cos(2 * 3.14159265358979323846 * u2);
  }
  double uniform() { return rng_.uniform(); }

 private:
  Rng rng_;
  double spare_ = 0;
  bool has_spare_ = false;
};

/// A synthetic GPU: a launch of arm a takes base * ratio_a * drift * exp(sigma Z), with sigma set
/// for a per-launch coefficient of variation `cv` (log-normal noise), plus rare 30% outliers
/// (preemption, a clock dip). `drift` grows linearly from 1 to 1 + drift_total over
/// `drift_launches` launches, the same for both arms.
struct GpuModel {
  double base_ns = 10000;
  double candidate_ratio = 1.0;
  double cv = 0.02;
  double outlier_probability = 0.005;
  double drift_total = 0;
  double drift_launches = 1;
};

class SimulatedGpu : public ArmTimer {
 public:
  SimulatedGpu(const GpuModel& model, uint64_t seed)
      : model_(model), sigma_(std::sqrt(std::log1p(model.cv * model.cv))), normal_(seed) {}
  std::vector<double> measure(int arm, int launches) override {
    std::vector<double> t(launches);
    for (double& x : t) {
      const double progress = std::min(1.0, launches_ / model_.drift_launches);
      x = model_.base_ns * (arm == 1 ? model_.candidate_ratio : 1.0) *
          (1 + model_.drift_total * progress) * std::exp(sigma_ * normal_());
      if (normal_.uniform() < model_.outlier_probability) x *= 1.3;
      seconds_ += x * 1e-9;
      ++launches_;
    }
    return t;
  }
  double seconds_used() const override { return seconds_; }

 private:
  GpuModel model_;
  double sigma_;
  Normal normal_;
  double launches_ = 0;
  double seconds_ = 0;
};

struct SimulationSummary {
  int comparisons = 0;
  int regressions = 0;
  int passes = 0;
  int invalid = 0;
  double mean_blocks = 0;
  int grown = 0;           ///< comparisons whose budget grew (InterleaveOptions::growth_s)
  double max_grown_s = 0;  ///< the most one of them grew by
  double rate(int count) const { return static_cast<double>(count) / comparisons; }
};

/// Runs `comparisons` independent interleaved comparisons on the model, seeds derived from
/// `master`.
SimulationSummary simulate(const GpuModel& model, const InterleaveOptions& options, int comparisons,
                           uint64_t master) {
  SimulationSummary s;
  s.comparisons = comparisons;
  for (int i = 0; i < comparisons; ++i) {
    SimulatedGpu gpu(model, derive_seed(master, "noise", i));
    Rng order(derive_seed(master, "order", i));
    const InterleaveResult r = run_interleaved(gpu, options, order);
    s.regressions += r.decision.decision == Decision::regression;
    s.passes += r.decision.decision == Decision::pass;
    s.invalid += r.invalid;
    s.mean_blocks += static_cast<double>(r.blocks.size()) / comparisons;
    s.grown += r.grown_s > 0;
    if (std::getenv("KGATE_DEBUG_GROWTH") && r.decision.decision == Decision::inconclusive)
      std::cout << "  inconclusive: blocks " << r.blocks.size() << " stages " << r.stages
                << " grown " << r.grown_s << " need " << blocks_to_decide(r.decision, options.delta)
                << " median " << r.decision.median << " [" << r.decision.lower << ", "
                << r.decision.upper << "] " << r.growth_refused << "\n";
    s.max_grown_s = std::max(s.max_grown_s, r.grown_s);
  }
  return s;
}

void print_figures(const std::string& what, const SimulationSummary& s) {
  std::cout << "[ figures  ] " << what << ": regression " << s.rate(s.regressions) << ", pass "
            << s.rate(s.passes) << ", inconclusive "
            << s.rate(s.comparisons - s.regressions - s.passes) << " of " << s.comparisons
            << " comparisons; mean blocks " << s.mean_blocks;
  if (s.grown > 0)
    std::cout << "; budget grew in " << s.grown << " (at most " << s.max_grown_s << " s)";
  std::cout << "\n";
}

/// Binomial slack for an observed error rate: if the true rate were exactly alpha, the rate seen
/// in n comparisons exceeds alpha + 3.09 sqrt(alpha (1 - alpha) / n) with probability about 0.1%
/// (normal approximation, fine for n alpha >= 50). The simulations are seeded, so this does not
/// make the test flaky; it says how far above alpha an observed rate can be while the gate still
/// meets its promise, and a real violation (e.g. an off-by-one rank) lands well outside it.
double binomial_slack(double alpha, int n) { return 3.09 * std::sqrt(alpha * (1 - alpha) / n); }

// Default options throughout: 5 launches per arm per half-block (20 per block), 30 blocks per
// stage, 4 stages, alpha = 0.05 (0.0125 per look), 2% per-launch CV. A block's log ratio then has
// a standard deviation of about sqrt(2 * pi/2 * 0.02^2 / 10) ~ 0.011.

struct PowerScenario {
  const char* name;
  double ratio;         ///< true candidate / baseline time
  double delta;         ///< minimum effect of the gate
  double stated_power;  ///< promised fraction of comparisons that find the regression
};

// Stated powers, from the design above (per-block P(d <= threshold) = Phi(-gap / 0.011) and the
// sign test's rank at n = 30, 60, 90, 120, alpha 0.0125 per look), with a margin for the
// approximation:
//   5% at delta 2%:   gap 0.029 (2.6 sd), decided at the first look.
//   2% at delta 1%:   gap 0.0099 (0.9 sd), ~90% at the first look, ~100% by the fourth.
//   1% at delta 0.5%: gap 0.005 (0.45 sd), ~30% / 65% / 85% / 93% by look.
constexpr PowerScenario kPowerScenarios[] = {
    {"5% slower, delta 2%", 1.05, 0.02, 0.99},
    {"2% slower, delta 1%", 1.02, 0.01, 0.95},
    {"1% slower, delta 0.5%", 1.01, 0.005, 0.90},
};
constexpr int kPowerComparisons = 200;

TEST(SpeedGateSimulation, PowerAtKnownSlowdowns) {
  uint64_t master = 1000;
  for (const PowerScenario& scenario : kPowerScenarios) {
    GpuModel model;
    model.candidate_ratio = scenario.ratio;
    InterleaveOptions options;
    options.delta = scenario.delta;
    const SimulationSummary s = simulate(model, options, kPowerComparisons, ++master);
    print_figures(std::string("power, ") + scenario.name, s);
    EXPECT_GE(s.rate(s.regressions), scenario.stated_power) << scenario.name;
    EXPECT_EQ(s.passes, 0) << scenario.name;
    EXPECT_EQ(s.invalid, 0) << scenario.name;
  }
}

constexpr int kFalsePositiveComparisons = 2000;

TEST(SpeedGateSimulation, AAFalsePositiveRate) {
  GpuModel model;  // both arms identical
  InterleaveOptions options;

  // At the default delta 2% a regression needs a bound above ln(1.02) with a true median of 0.
  const SimulationSummary at_delta = simulate(model, options, kFalsePositiveComparisons, 2000);
  print_figures("A/A, delta 2%", at_delta);
  const double slack = binomial_slack(options.alpha, kFalsePositiveComparisons);
  EXPECT_LE(at_delta.rate(at_delta.regressions), options.alpha + slack);
  // ...and the gate is not trivially inconclusive: equal kernels pass.
  EXPECT_GE(at_delta.rate(at_delta.passes), 0.95);

  // The sharp case: delta 0 puts the threshold on the true median, where the sign test's error
  // rate is as large as it gets; both wrong answers must stay within alpha across all looks.
  options.delta = 0;
  const SimulationSummary sharp = simulate(model, options, kFalsePositiveComparisons, 2001);
  print_figures("A/A, delta 0", sharp);
  EXPECT_LE(sharp.rate(sharp.regressions), options.alpha + slack);
  EXPECT_LE(sharp.rate(sharp.passes), options.alpha + slack);
}

// --fill-budget on a fast kernel: 10 us launches, 0.1 s of budget (about 480 blocks where the
// fixed stages stop at 120). A 1% slowdown at delta 0.5%, found in ~93% of comparisons with fixed
// stages (above), is found in every one; the A/A rates stay within alpha at the sharp delta 0.
TEST(SpeedGateSimulation, FillBudgetFindsOnePercentAtHalfAPercentAndKeepsAlpha) {
  InterleaveOptions options;
  options.fill_budget = true;
  options.time_budget_s = 0.1;
  options.delta = 0.005;
  GpuModel slow;
  slow.candidate_ratio = 1.01;
  const SimulationSummary power = simulate(slow, options, kPowerComparisons, 3000);
  print_figures("power with --fill-budget, 1% slower, delta 0.5%", power);
  EXPECT_GE(power.rate(power.regressions), 0.99);
  EXPECT_EQ(power.passes, 0);
  EXPECT_GT(power.mean_blocks, 121);  // (the stages grew)

  GpuModel same;
  options.delta = 0;
  const SimulationSummary sharp = simulate(same, options, kFalsePositiveComparisons, 3001);
  print_figures("A/A with --fill-budget, delta 0", sharp);
  const double slack = binomial_slack(options.alpha, kFalsePositiveComparisons);
  EXPECT_LE(sharp.rate(sharp.regressions), options.alpha + slack);
  EXPECT_LE(sharp.rate(sharp.passes), options.alpha + slack);
}

TEST(SpeedGateSimulation, NoiseFreeLinearDriftCancelsInEveryBlock) {
  // Without noise, A B B A puts the medians of both arms at the block's centre in time: a linear
  // trend leaves every log ratio at 0 (A A B B would give 10 launches' worth of drift, 4e-4 here).
  InterleaveOptions options;
  options.max_stages = 1;
  GpuModel model;
  model.cv = 0;
  model.outlier_probability = 0;
  model.drift_total = 0.10;
  model.drift_launches = 2500;
  SimulatedGpu gpu(model, 1);
  Rng rng(9);
  const InterleaveResult r = run_interleaved(gpu, options, rng);
  ASSERT_EQ(r.blocks.size(), static_cast<size_t>(options.blocks_per_stage));
  for (const Block& block : r.blocks) EXPECT_NEAR(block.log_ratio, 0.0, 1e-12);
  EXPECT_EQ(r.decision.decision, Decision::pass);
}

/// Identical arms at the sharpest delta (0: the threshold on the true median, both wrong answers
/// within alpha across all looks, kFalsePositiveComparisons comparisons) and at delta 2% (no
/// regression beyond alpha, 1000 comparisons); returns the delta-0 summary.
SimulationSummary expect_aa_within_alpha(const GpuModel& model, InterleaveOptions options,
                                         uint64_t master, const std::string& what) {
  options.delta = 0;
  const SimulationSummary sharp = simulate(model, options, kFalsePositiveComparisons, master);
  print_figures(what + ", delta 0", sharp);
  const double slack = binomial_slack(options.alpha, kFalsePositiveComparisons);
  EXPECT_LE(sharp.rate(sharp.regressions), options.alpha + slack) << what;
  EXPECT_LE(sharp.rate(sharp.passes), options.alpha + slack) << what;
  options.delta = 0.02;
  const SimulationSummary at_delta = simulate(model, options, 1000, master + 1);
  print_figures(what + ", delta 2%", at_delta);
  EXPECT_LE(at_delta.rate(at_delta.regressions),
            options.alpha + binomial_slack(options.alpha, 1000))
      << what;
  return sharp;
}

TEST(SpeedGateSimulation, SlowDriftDoesNotCreateRegressions) {
  // Both arms slow down by 10% linearly over the longest possible run (4 x 30 blocks x 20
  // launches); counterbalanced A B B A blocks cancel a linear trend inside each block.
  InterleaveOptions options;
  GpuModel model;
  model.drift_total = 0.10;
  model.drift_launches =
      4.0 * options.launches_per_arm * options.blocks_per_stage * options.max_stages;
  expect_aa_within_alpha(model, options, 3000, "drift 10%");  // (any bias would show at delta 0)
}

/// A kernel of `launch_ns` launches at a per-launch coefficient of variation `cv`, the candidate
/// `ratio` times the baseline (the model's other settings as they default).
GpuModel slow_kernel(double launch_ns, double cv, double ratio) {
  GpuModel m;
  m.base_ns = launch_ns;
  m.cv = cv;
  m.candidate_ratio = ratio;
  return m;
}

// Budget growth (InterleaveOptions::growth_s) on a slow, noisy kernel: 10 ms launches with a 40%
// coefficient of variation, so that a 3 s budget holds 15 blocks (the first look, cut by time). A
// 19% slowdown at delta 2% is then mostly undecided; with 30 s of growth the run goes on to the
// looks its estimate says decide it, and finds the slowdown. Each comparison grows by at most its
// growth allowance and one block.
TEST(SpeedGateSimulation, BudgetGrowthDecidesASlowKernelsSlowdown) {
  const GpuModel model = slow_kernel(1e7, 0.4, 1.19);
  InterleaveOptions options;
  options.time_budget_s = 3;
  options.min_blocks = speed::min_blocks_to_decide(options.alpha, options.max_stages, 4);
  const SimulationSummary fixed = simulate(model, options, 100, 4000);
  print_figures("19% slower, 10 ms launches, cv 40%, 3 s budget", fixed);
  EXPECT_EQ(fixed.grown, 0);
  EXPECT_LE(fixed.rate(fixed.regressions), 0.8);  // (the budget alone mostly does not decide)

  options.growth_s = 30;
  const SimulationSummary grown = simulate(model, options, 100, 4000);
  print_figures("the same with 30 s of budget growth", grown);
  EXPECT_GE(grown.rate(grown.regressions), 0.95);
  EXPECT_EQ(grown.passes, 0);
  EXPECT_GT(grown.grown, 0);
  const double block_s = 20 * model.base_ns * 1.19 * 1e-9 * 2;  // a slow block, with margin
  EXPECT_LE(grown.max_grown_s, options.growth_s + block_s);
}

// A kernel so slow that a stage of 30 blocks would cost more than the whole growth (60 ms launches,
// 1.2 s blocks: 7 blocks, the fewest that decide, in a 3 s budget): the grown stages shrink to what
// the growth pays for at each look left (30 s / (1.5 s x 3 looks) = 6 blocks), and the run stays
// within it.
TEST(SpeedGateSimulation, BudgetGrowthShrinksAVerySlowKernelsStages) {
  const GpuModel model = slow_kernel(6e7, 0.3, 1.18);
  InterleaveOptions options;
  options.time_budget_s = 3;
  options.delta = 0.08;
  options.min_blocks = speed::min_blocks_to_decide(options.alpha, options.max_stages, 6);
  const SimulationSummary fixed = simulate(model, options, 100, 4200);
  print_figures("18% slower at delta 8%, 60 ms launches, cv 30%, 3 s budget", fixed);
  options.growth_s = 30;
  const SimulationSummary grown = simulate(model, options, 100, 4200);
  print_figures("the same with 30 s of budget growth", grown);
  EXPECT_GT(grown.grown, 0);
  EXPECT_GT(grown.regressions, fixed.regressions + 10);
  EXPECT_EQ(grown.passes, 0);
  EXPECT_LE(grown.max_grown_s, options.growth_s + 20 * 6e7 * 1.18 * 1e-9 * 2);
  EXPECT_LT(grown.mean_blocks, 7 + 3 * 6 + 1);
}

// Growth goes on where the data looks decidable: a data-dependent continuation, never a
// data-dependent look (stages stay whole, at most max_stages looks at alpha / max_stages each), so
// the A/A error rates stay within alpha at the sharpest delta, however much growth is allowed.
TEST(SpeedGateSimulation, BudgetGrowthKeepsAlpha) {
  GpuModel model;
  model.base_ns = 1e6;  // 1 ms launches: 0.02 s blocks, 15 in a 0.3 s budget
  model.cv = 0.1;
  InterleaveOptions options;
  options.time_budget_s = 0.3;
  options.growth_s = 1000;
  const SimulationSummary sharp =
      expect_aa_within_alpha(model, options, 4100, "A/A with budget growth");
  EXPECT_GT(sharp.grown, 0);  // (growth was exercised)
}

TEST(Interleave, BudgetGrowthRefusedSaysWhy) {
  // A clear 19% slowdown on launches so noisy that 15 blocks leave it undecided (seeded).
  const GpuModel model = slow_kernel(1e7, 0.4, 1.19);
  InterleaveOptions options;
  options.time_budget_s = 3;
  options.growth_s = 0.5;  // less than a stage of 30 blocks (6 s) could ever take
  int refused = 0;
  for (int seed = 0; seed < 20; ++seed) {
    SimulatedGpu gpu(model, derive_seed(5000, "noise", seed));
    Rng order(derive_seed(5000, "order", seed));
    const InterleaveResult r = run_interleaved(gpu, options, order);
    EXPECT_EQ(r.grown_s, 0);
    if (r.decision.decision != Decision::inconclusive ||
        blocks_to_decide(r.decision, options.delta) <= 0)
      continue;
    ++refused;
    EXPECT_NE(r.growth_refused.find("the run's budget growth has 0.5 s left (--budget-growth)"),
              std::string::npos)
        << r.growth_refused;
  }
  EXPECT_GT(refused, 0);

  // With one look (max_stages 1) there is no later look to grow into: no growth, no reason.
  options.max_stages = 1;
  options.growth_s = 1000;
  SimulatedGpu gpu(model, 7);
  Rng order(7);
  const InterleaveResult one = run_interleaved(gpu, options, order);
  EXPECT_EQ(one.grown_s, 0);
  EXPECT_TRUE(one.growth_refused.empty()) << one.growth_refused;

  // A constant 1% slowdown at delta 2% estimated far out of reach of the looks left: said so.
  options.max_stages = 2;
  options.time_budget_s = 1.5;  // 7 blocks at the first look, 37 at the second
  const GpuModel close = slow_kernel(1e7, 0.3, 1.03);
  int beyond = 0;
  for (int seed = 0; seed < 20; ++seed) {
    SimulatedGpu g(close, derive_seed(5100, "noise", seed));
    Rng o(derive_seed(5100, "order", seed));
    const InterleaveResult r = run_interleaved(g, options, o);
    if (r.growth_refused.find("more than twice what the 1 look(s) left reach (37 blocks)") !=
        std::string::npos)
      ++beyond;
  }
  EXPECT_GT(beyond, 0);
}

}  // namespace
}  // namespace kgate::speed
