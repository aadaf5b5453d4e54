// Interleaved A/B timing: counterbalanced blocks in randomized order, dropped-block bookkeeping,
// and staged extension with the speed gate's decision at each look.
#include "gates/speed/interleave.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.hpp"

namespace kgate::speed {
namespace {

void validate(const InterleaveOptions& options) {
  std::ostringstream problem;
  if (options.launches_per_arm < 1) problem << "launches_per_arm must be >= 1; ";
  if (options.blocks_per_stage < 1) problem << "blocks_per_stage must be >= 1; ";
  if (options.max_stages < 1) problem << "max_stages must be >= 1; ";
  if (!(options.alpha > 0 && options.alpha < 0.5)) problem << "alpha must be in (0, 0.5); ";
  if (!(options.delta > -1) || !std::isfinite(options.delta)) problem << "delta must be > -1; ";
  if (!(options.time_budget_s >= 0)) problem << "time_budget_s must be >= 0; ";
  if (options.max_stage_growth < 1) problem << "max_stage_growth must be >= 1; ";
  if (!(options.growth_s >= 0)) problem << "growth_s must be >= 0; ";
  if (!(options.max_dropped_fraction >= 0 && options.max_dropped_fraction <= 1)) {
    problem << "max_dropped_fraction must be in [0, 1]; ";
  }
  const std::string text = problem.str();
  if (!text.empty()) throw_usage("interleaved timing options: " + text.substr(0, text.size() - 2));
}

/// Why a half-block's samples cannot be used, or an empty string when they can.
std::string sample_problem(const std::vector<double>& samples, int arm, int expected) {
  const char* name = arm == 0 ? "baseline" : "candidate";
  std::ostringstream why;
  if (static_cast<int>(samples.size()) != expected) {
    why << name << " returned " << samples.size() << " samples, expected " << expected;
    return why.str();
  }
  for (double x : samples) {
    if (!std::isfinite(x)) {
      why << name << " sample is not finite (" << x << ")";
      return why.str();
    }
    if (x <= 0) {
      why << name << " sample is not positive (" << x << " ns)";
      return why.str();
    }
  }
  return {};
}

void append(std::vector<double>& to, const std::vector<double>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

/// Times one block: A B B A or B A A B (a fair coin), each letter `launches` launches.
Block run_block(ArmTimer& timer, int launches, Rng& rng) {
  Block block;
  block.baseline_first = rng.coin();
  const int first = block.baseline_first ? 0 : 1;
  const int order[4] = {first, 1 - first, 1 - first, first};
  std::string problem;
  for (int arm : order) {
    const std::vector<double> samples = timer.measure(arm, launches);
    if (problem.empty()) problem = sample_problem(samples, arm, launches);
    append(arm == 0 ? block.a : block.b, samples);
  }
  if (problem.empty()) {
    block.log_ratio = std::log(speed::median(block.b) / speed::median(block.a));
  } else {
    block.dropped = problem;
  }
  // Always asked, so that the timer sees one call per block even when the block is already dropped.
  std::optional<std::string> disturbance = timer.block_disturbance();
  if (disturbance && !block.dropped) block.dropped = *disturbance;
  timer.block_done();
  return block;
}

// The blocks of look `stage` (0-based), `blocks` blocks having taken `used` seconds so far
// (`grown_stage`: the budget grew, and every stage after it has this many blocks; 0: it did not).
int blocks_in_stage(const InterleaveOptions& options, int stage, size_t blocks, double used,
                    int grown_stage) {
  if (grown_stage > 0) return grown_stage;
  if (!options.fill_budget || stage == 0 || blocks == 0 || !(used > 0))
    return options.blocks_per_stage;
  const double left = options.time_budget_s - used;
  if (!(left > 0)) return options.blocks_per_stage;
  const double fit =
      left / (used / static_cast<double>(blocks)) / static_cast<double>(options.max_stages - stage);
  const double most = static_cast<double>(options.blocks_per_stage) * options.max_stage_growth;
  return static_cast<int>(
      std::clamp(std::floor(fit), static_cast<double>(options.blocks_per_stage), most));
}

// Budget growth at an undecided look whose budget ran out (InterleaveOptions::growth_s): the
// seconds to add, or 0 with the reason in `refused` (empty when growth does not apply at all).
// `stage_blocks` is the grown stages' size: set at the first growth, from time alone (the seconds
// per block and the growth left when the comparison starts to grow, spread over the looks left; at
// most blocks_per_stage), never from the data, so that no look falls where the data chose.
double growth_for(const InterleaveOptions& options, const DecisionResult& decision, int stage,
                  size_t blocks, double used, double grown_so_far, int& stage_blocks,
                  std::string& refused) {
  refused.clear();
  const int looks_left = options.max_stages - stage - 1;
  if (!(options.growth_s > 0) || looks_left < 1 || blocks == 0 || !(used > 0) ||
      static_cast<int>(blocks) < options.min_blocks)
    return 0;
  const int64_t need = blocks_to_decide(decision, options.delta);
  if (need <= 0) return 0;  // (the note says why no budget would decide it)
  // A quarter more than the blocks so far took: blocks vary, and a stage cut short by time looks
  // early.
  const double per_block = used / static_cast<double>(blocks) * 1.25;
  const double left = options.growth_s - grown_so_far;
  std::ostringstream why;
  why.precision(3);
  if (stage_blocks == 0) {
    const double fit = std::floor(left / per_block / looks_left);
    if (fit < 1) {
      why << "the budget did not grow: the run's budget growth has " << std::max(0.0, left)
          << " s left (--budget-growth), less than a block (" << per_block << " s) for each of the "
          << looks_left << " look(s) left";
      refused = why.str();
      return 0;
    }
    stage_blocks = static_cast<int>(std::min<double>(fit, options.blocks_per_stage));
  }
  // An estimate from the first look's few blocks is uncertain by about a factor of two: up to twice
  // what the looks left reach, the run grows to them all.
  const int64_t reach =
      static_cast<int64_t>(blocks) + static_cast<int64_t>(looks_left) * stage_blocks;
  if (need > 2 * reach) {
    why << "the budget did not grow: about " << need << " blocks would decide it, more than twice "
        << "what the " << looks_left << " look(s) left reach (" << reach << " blocks)";
    refused = why.str();
    return 0;
  }
  const int64_t stages =
      std::clamp<int64_t>((need - decision.n + stage_blocks - 1) / stage_blocks, 1, looks_left);
  const double extra = static_cast<double>(stages * stage_blocks) * per_block;
  if (extra > left) {  // (a later growth of the same comparison, its growth spent on other stages)
    why << "the budget did not grow: deciding it would take about " << extra
        << " s more, and the run's budget growth has " << std::max(0.0, left)
        << " s left (--budget-growth)";
    refused = why.str();
    return 0;
  }
  return extra;
}

}  // namespace

int warm_up(ArmTimer& timer, int max_batches, double max_seconds, int launches, double settle) {
  const double start = timer.seconds_used();
  double prev_a = 0, prev_b = 0;
  int batch = 0;
  while (batch < max_batches) {
    const double ma = median(timer.measure(0, launches));
    const double mb = median(timer.measure(1, launches));
    const bool settled = batch > 0 && std::abs(ma - prev_a) <= settle * prev_a &&
                         std::abs(mb - prev_b) <= settle * prev_b;
    prev_a = ma;
    prev_b = mb;
    ++batch;
    if (settled || (batch >= 2 && timer.seconds_used() - start >= max_seconds)) break;
  }
  return batch;
}

InterleaveResult run_interleaved(ArmTimer& timer, const InterleaveOptions& options, Rng& rng) {
  validate(options);
  InterleaveResult result;
  const double start = timer.seconds_used();
  double budget = options.time_budget_s;  // grows (growth_for) at an undecided look out of time
  bool grown = false;
  int grown_stage = 0;  // the grown stages' blocks (growth_for)
  // The budget stops the run only once a decision is possible at all (min_blocks), or at the hard
  // cap of max_budget_factor x the budget.
  auto budget_spent = [&] {
    const double used = timer.seconds_used() - start;
    if (static_cast<int>(result.blocks.size()) < options.min_blocks)
      return used >= budget * std::max(1.0, options.max_budget_factor);
    return used >= budget;
  };

  for (int stage = 0; stage < options.max_stages; ++stage) {
    const int stage_blocks = blocks_in_stage(options, stage, result.blocks.size(),
                                             timer.seconds_used() - start, grown_stage);
    bool out_of_time = false;
    for (int i = 0; i < stage_blocks && !out_of_time; ++i) {
      result.blocks.push_back(run_block(timer, options.launches_per_arm, rng));
      out_of_time = budget_spent();
    }

    std::vector<double> kept;
    for (const Block& block : result.blocks) {
      if (!block.dropped) kept.push_back(block.log_ratio);
    }
    result.stages = stage + 1;
    result.alpha_last_stage = speed::stage_alpha(options.alpha, stage, options.max_stages);
    result.decision = speed::decide(kept, options.delta, result.alpha_last_stage);

    const size_t total = result.blocks.size();
    const size_t dropped = total - kept.size();
    if (static_cast<double>(dropped) > options.max_dropped_fraction * static_cast<double>(total)) {
      std::ostringstream reason;
      reason << dropped << " of " << total << " blocks dropped (limit "
             << options.max_dropped_fraction * 100 << "%)";
      for (const Block& block : result.blocks) {
        if (block.dropped) {
          reason << "; first reason: " << *block.dropped;
          break;
        }
      }
      result.invalid = true;
      result.invalid_reason = reason.str();
      // An unusable measurement never passes (nor regresses); its statistics stay for the report.
      result.decision.decision = speed::Decision::inconclusive;
      break;
    }
    if (result.decision.decision != speed::Decision::inconclusive) break;
    if (out_of_time) {
      const double used = timer.seconds_used() - start;
      const double extra =
          growth_for(options, result.decision, stage, result.blocks.size(), used,
                     grown ? std::max(0.0, std::max(budget, used) - options.time_budget_s) : 0.0,
                     grown_stage, result.growth_refused);
      if (!(extra > 0)) break;
      budget = std::max(budget, used) + extra;
      grown = true;
    }
  }
  result.seconds = timer.seconds_used() - start;
  if (grown) result.grown_s = std::max(0.0, result.seconds - options.time_budget_s);
  if (static_cast<int>(result.blocks.size()) < options.min_blocks && !result.blocks.empty())
    result.budget_needed_s =
        result.seconds / static_cast<double>(result.blocks.size()) * options.min_blocks * 1.2;
  return result;
}

}  // namespace kgate::speed
