// The speed gate's verdicts (gate.hpp).
#include "gates/speed/gate.hpp"

#include <cmath>
#include <cstdio>
#include <optional>

#include "gates/speed/decision.hpp"

namespace kgate::speed {
namespace {

// Appends `text` to a comparison's note, "; " between the parts.
void add_note(std::string& note, const std::string& text) {
  note += (note.empty() ? "" : "; ") + text;
}

}  // namespace

void decide_comparison(const InterleaveResult& r, const GateInputs& in, SpeedComparison& cmp) {
  cmp.blocks = static_cast<int64_t>(r.blocks.size());
  for (const auto& b : r.blocks) {
    if (b.dropped) {
      ++cmp.dropped_blocks;
      continue;
    }
    cmp.baseline_ns.insert(cmp.baseline_ns.end(), b.a.begin(), b.a.end());
    cmp.candidate_ns.insert(cmp.candidate_ns.end(), b.b.begin(), b.b.end());
  }
  cmp.baseline_median_ns = median(cmp.baseline_ns);
  cmp.candidate_median_ns = median(cmp.candidate_ns);
  cmp.ratio = std::exp(r.decision.hodges_lehmann);
  cmp.ratio_lower = std::exp(r.decision.lower);
  cmp.ratio_upper = std::exp(r.decision.upper);
  cmp.p_value = r.decision.p_regression;
  cmp.p_adjusted = cmp.p_value;
  if (r.budget_needed_s > 0) {
    char text[200];
    std::snprintf(
        text, sizeof text,
        "no decision was possible: %zu blocks fit %g x the time budget, and a decision needs %d; "
        "--time-budget %.0f would allow it",
        r.blocks.size(), in.max_budget_factor, in.min_blocks, std::ceil(r.budget_needed_s));
    add_note(cmp.note, text);
  }
  if (r.grown_s > 0) {
    cmp.budget_grown_s = r.grown_s;
    char text[160];
    std::snprintf(text, sizeof text,
                  "the time budget grew by %.1f s to decide it (%zu blocks; the run's "
                  "--budget-growth)",
                  r.grown_s, r.blocks.size());
    add_note(cmp.note, text);
  }
  // Speed of light: each arm's fraction of the copy bandwidth; in cold-cache timing a median
  // below the op's floor is not a speedup but a measurement (or a kernel) to distrust.
  std::optional<std::string> too_fast;
  const LightFloor& light = in.light;
  if (light.read_bytes + light.written_bytes > 0 && light.ceiling_bytes_per_s > 0) {
    cmp.sol_read_bytes = light.read_bytes;
    cmp.sol_written_bytes = light.written_bytes;
    cmp.sol_ceiling_bytes_per_s = light.ceiling_bytes_per_s;
    cmp.sol_candidate_fraction = light_fraction(light, cmp.candidate_median_ns);
    cmp.sol_baseline_fraction = light_fraction(light, cmp.baseline_median_ns);
    cmp.sol_enforced = in.flush_l2;
    if (cmp.sol_enforced) {
      too_fast = faster_than_light(light, cmp.candidate_median_ns, "'" + in.candidate + "'");
      if (!too_fast)
        too_fast = faster_than_light(
            light, cmp.baseline_median_ns,
            "baseline '" + in.baseline + "' (is the op's min_bytes floor too high?)");
    }
  }
  if (too_fast) {
    cmp.decision = Outcome::invalid;
    add_note(cmp.note, *too_fast);
  } else if (r.invalid) {
    cmp.decision = Outcome::invalid;
    add_note(cmp.note, r.invalid_reason);
  } else {
    switch (r.decision.decision) {
      case Decision::pass:
        cmp.decision = Outcome::passed;
        break;
      case Decision::regression:
        cmp.decision = Outcome::regressed;
        break;
      case Decision::inconclusive: {
        cmp.decision = Outcome::inconclusive;
        // What would decide it: the estimate in the verdict (the bounds straddle delta).
        const int64_t need = blocks_to_decide(r.decision, cmp.delta);
        char text[256];
        if (need > 0 && !r.blocks.empty() && r.seconds > 0) {
          const double per_block = r.seconds / static_cast<double>(r.blocks.size());
          std::snprintf(text, sizeof text,
                        "undecided after %lld blocks: about %lld blocks (--time-budget %.0f) "
                        "would decide it, if the next blocks are like these",
                        static_cast<long long>(r.decision.n), static_cast<long long>(need),
                        std::ceil(per_block * static_cast<double>(need) * 1.2));
          add_note(cmp.note, text);
          if (!r.growth_refused.empty()) add_note(cmp.note, r.growth_refused);
        } else if (need < 0 && r.decision.n >= in.min_blocks) {
          add_note(cmp.note,
                   "undecided: the estimate sits on delta, so no budget would decide it (the "
                   "kernel is as slow as the threshold)");
        }
        break;
      }
    }
  }
}

void apply_holm(std::vector<KernelReport>& kernels) {
  std::vector<double> p;
  std::vector<SpeedComparison*> refs;
  for (auto& k : kernels)
    for (auto& s : k.speed)
      // (UNCHANGED entries were never timed: no test, so not one of Holm's m.)
      if (s.decision != Outcome::skipped && s.decision != Outcome::invalid &&
          s.decision != Outcome::unchanged) {
        p.push_back(s.p_value);
        refs.push_back(&s);
      }
  const auto adjusted = holm_adjust(p);
  for (size_t i = 0; i < refs.size(); ++i) {
    refs[i]->p_adjusted = adjusted[i];
    if (refs[i]->decision == Outcome::regressed && adjusted[i] > refs[i]->alpha) {
      refs[i]->decision = Outcome::inconclusive;
      refs[i]->note += (refs[i]->note.empty() ? "" : "; ") +
                       std::string("regression not significant after Holm correction");
    }
  }
  for (auto& k : kernels) {
    if (k.outcome != Outcome::regressed) continue;
    bool any = false;
    for (const auto& s : k.speed) any |= s.decision == Outcome::regressed;
    if (!any) k.outcome = Outcome::inconclusive;
  }
}

}  // namespace kgate::speed
