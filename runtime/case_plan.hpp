// The case lists of a kernel's check, and what makes them: the generated cases with the kernel's
// traits (the tile sizes it declares, its manifest names and its launches show on a probe case),
// its guard's and the captured ones, the timed shapes, and the coverage the report keeps. Used by
// the pipeline (pipeline.cpp); not installed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/pipeline.hpp"

namespace kgate {

/// What one probe case's launches showed of a kernel's tiles (a CUDA kernel, torch op or package
/// that declares none): the sizes inferred, how it went, and a fault if the kernel lost the
/// context.
struct TileProbe {
  std::vector<FoundSize> sizes;
  std::string case_id;  ///< "" when no probe ran
  std::string note;     ///< why nothing was inferred, or the sizes came from an earlier worker
  std::optional<CaseResult> fault;
};

/// The probe, where it applies (a CUDA kernel without declared tiles, not a replay or a resumed
/// worker, not under compute-sanitizer); options.observed_sizes when an earlier worker probed.
TileProbe probe_tiles(Runner& runner, const KernelInfo& kernel, const OpSignature& op,
                      const CheckOptions& options, uint64_t seed);

/// report.json's correctness.coverage of a case list.
nlohmann::json coverage_json(const props::EdgeCoverage& cov, const props::KernelTraits& traits,
                             const TileProbe& probe);

/// The correctness cases of `kernel` (of `op`) with these traits, generated as `gen` says, its
/// guard's, extra and captured cases after them (options.only_cases instead, when given).
std::vector<Case> cases_of(const KernelInfo& kernel, const OpSignature& op,
                           const props::KernelTraits& traits, const props::GeneratorOptions& gen,
                           const CheckOptions& options);

}  // namespace kgate
