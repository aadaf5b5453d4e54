// Interleaved A/B timing: counterbalanced blocks (A B B A or B A A B, order randomized per block),
// staged extension until the speed gate decides or the budget runs out.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "gates/speed/decision.hpp"

namespace kgate::speed {

/// Something that can time the baseline (arm 0) and the candidate (arm 1).
class ArmTimer {
 public:
  virtual ~ArmTimer() = default;
  /// Runs `launches` launches of `arm` and returns each one's time in nanoseconds.
  virtual std::vector<double> measure(int arm, int launches) = 0;
  /// Called after each block: a reason to drop the block (e.g. "thermal throttle"), or nullopt.
  virtual std::optional<std::string> block_disturbance() { return std::nullopt; }
  /// Called at the end of each block, after block_disturbance(): e.g. to judge the block's checked
  /// launches and redraw the inputs for the next one. May throw to end the run.
  virtual void block_done() {}
  /// Seconds of device (or wall) time consumed so far, for the budget.
  virtual double seconds_used() const = 0;
};

/// kgate check's --budget-growth default: seconds a whole run may add to its comparisons' time
/// budgets to decide them (InterleaveOptions::growth_s).
inline constexpr double kDefaultBudgetGrowth = 30;

struct InterleaveOptions {
  double delta = 0.02;                ///< minimum effect that counts as a regression (2%)
  double alpha = 0.05;                ///< false-positive rate of one comparison, across all stages
  int launches_per_arm = 5;           ///< launches per arm per half-block (A B B A = 4 half-blocks)
  int blocks_per_stage = 30;          ///< blocks added per stage
  int max_stages = 4;                 ///< at most this many looks; alpha is split across them
  double time_budget_s = 3.0;         ///< stop extending after this much timer time
  double max_dropped_fraction = 0.2;  ///< above this, the comparison is INVALID
  /// The budget does not stop the run before this many blocks (speed::min_blocks_to_decide: fewer
  /// can never decide), unless they would take more than `max_budget_factor` x the budget.
  int min_blocks = 0;
  double max_budget_factor = 10;
  /// Later stages grow to spend the time budget (--fill-budget): after the first look, each stage
  /// has as many blocks as the budget left allows over the looks left, at the seconds per block so
  /// far, at least blocks_per_stage and at most max_stage_growth x blocks_per_stage. Off: every
  /// stage has blocks_per_stage blocks, and a fast kernel stops at max_stages x blocks_per_stage
  /// blocks with most of its budget unspent. Each look's alpha (alpha / max_stages) does not depend
  /// on the stages' sizes, which depend on time alone, so the false-positive bound holds either
  /// way; the interval of a fast kernel narrows, and smaller effects above delta are found.
  bool fill_budget = false;
  int max_stage_growth = 16;
  /// Budget growth: seconds this comparison may add to time_budget_s to reach a decision (the
  /// caller's share of the run's --budget-growth; 0: never). When the budget ends a look undecided,
  /// with min_blocks blocks and looks left, and blocks_to_decide() estimates a decision within (up
  /// to twice) what the looks left reach, the budget grows by the estimated seconds of the stages
  /// that reach it. Grown stages have blocks_per_stage blocks, or fewer where the growth left
  /// cannot pay for that many at each look left (a slow kernel): a size fixed at the first growth
  /// from time alone. The looks stay at most max_stages, each at stage_alpha(): the data decides
  /// only whether the run goes on, never where a look falls, so the false-positive bound holds as
  /// without growth.
  double growth_s = 0;
};

/// One block: the samples of each arm and the block statistic.
struct Block {
  std::vector<double> a;  ///< baseline samples (ns)
  std::vector<double> b;  ///< candidate samples (ns)
  double log_ratio = 0;   ///< ln(median(b) / median(a))
  bool baseline_first = true;
  std::optional<std::string> dropped;  ///< why the block was dropped
};

struct InterleaveResult {
  speed::DecisionResult decision;  ///< of the last stage (inconclusive when invalid)
  bool invalid = false;            ///< too many dropped blocks
  std::string invalid_reason;
  int stages = 0;
  double alpha_last_stage = 0;
  std::vector<Block> blocks;  ///< all blocks, dropped ones included
  double seconds = 0;
  /// The run stopped at max_budget_factor x the budget with fewer than min_blocks blocks: a
  /// decision was out of reach, and this is the budget (seconds) that would allow it.
  double budget_needed_s = 0;
  /// Seconds the run took beyond time_budget_s after its budget grew (0: it did not grow).
  double grown_s = 0;
  /// Why an undecided run did not grow its budget (empty: it grew, was decided, or growth is off).
  std::string growth_refused;
};

/// Warm-up before the blocks: batches of `launches` launches of each arm until a batch's medians
/// are both within `settle` (relative) of the previous batch's, at most `max_batches` batches, and,
/// after the first two, no longer than `max_seconds` of timer.seconds_used() (a slow kernel on a
/// noisy host may never settle: the time budget bounds what is spent before timing). Returns the
/// batches run.
int warm_up(ArmTimer& timer, int max_batches, double max_seconds, int launches = 10,
            double settle = 0.02);

/// Runs interleaved blocks and decides; deterministic given the rng seed and the timer.
/// Each block is A B B A or B A A B (a fair coin from `rng`), each letter `launches_per_arm`
/// launches; block.a / block.b are an arm's two halves in time order. A block is dropped (kept in
/// `blocks`, left out of decisions) when a half returns the wrong number of samples or a
/// non-finite or non-positive one, or when timer.block_disturbance() gives a reason (it is asked
/// after every block).
/// After each `blocks_per_stage` blocks the kept log ratios are decided at
/// stage_alpha(alpha, stage, max_stages); the run stops at the first pass / regression, after
/// `max_stages` looks, or once timer.seconds_used() has grown by `time_budget_s` since the call
/// (checked after every block: an exhausted budget takes the look early, on the blocks so far).
/// An undecided look whose budget ran out may grow the budget (options.growth_s) and go on.
/// More than `max_dropped_fraction` of the blocks dropped at a look makes the result invalid (the
/// run stops; the reason names the counts) and its decision inconclusive, never pass.
/// Throws a usage Error for unusable options.
InterleaveResult run_interleaved(ArmTimer& timer, const InterleaveOptions& options, Rng& rng);

}  // namespace kgate::speed
