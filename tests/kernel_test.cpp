// The GoogleTest target of one kernel (kgate_add_kernel links it with the kernel's name): one test
// per property family — random, ragged, extreme, special, layout (the case families), memory and
// determinism. CUDA kernels report SKIPPED (visibly) on machines without a GPU.
// Knobs: KGATE_TEST_CASES (cases per case family, 24), KGATE_TEST_MEMORY_CASES (cases of the
// memory test over all families, 32).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "references/catalogue.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/pipeline.hpp"

// Compiled once for every kernel: each executable defines its kernel's name (kgate_add_kernel
// generates that one line); -DKGATE_KERNEL_NAME="name" still works for a build of one's own.
#ifndef KGATE_KERNEL_NAME
extern "C" const char kgate_kernel_name[];
#define KGATE_KERNEL_NAME kgate_kernel_name
#endif

namespace kgate {
namespace {

int64_t env_cases(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::max(1, std::atoi(v)) : fallback;
}

int64_t cases_per_family() { return env_cases("KGATE_TEST_CASES", 24); }
int64_t memory_cases() { return env_cases("KGATE_TEST_MEMORY_CASES", 32); }

Runner& runner_for(Backend backend) {
  static std::unique_ptr<Runner> runner;
  if (!runner) runner = std::make_unique<Runner>(backend);
  return *runner;
}

/// Skips the test (visibly) for a CUDA kernel on a machine without a usable GPU.
#define KGATE_SKIP_WITHOUT_DEVICE(kernel)                                                          \
  do {                                                                                             \
    std::string why_;                                                                              \
    if ((kernel).backend == Backend::cuda && !cuda::device_available(&why_)) GTEST_SKIP() << why_; \
  } while (0)

std::string describe(const CaseResult& r) {
  return "  case: " + r.kcase.id() + " (" + r.kcase.family + ")\n  verdict: [" +
         std::string(reason_name(r.rule)) + "] " + r.message + "\n  repro: " + r.repro;
}

class Family : public ::testing::TestWithParam<std::string> {};

TEST_P(Family, AllCasesPass) {
  const KernelInfo& kernel = find_kernel(KGATE_KERNEL_NAME);
  KGATE_SKIP_WITHOUT_DEVICE(kernel);
  const OpSignature& op = find_op(kernel.op);
  const auto traits = traits_of(kernel);
  const auto families = props::applicable_families(op, traits);
  if (std::find(families.begin(), families.end(), GetParam()) == families.end())
    GTEST_SKIP() << "family '" << GetParam() << "' does not apply to " << kernel.name
                 << " (it declares no strided/unaligned support, the op has no NaN contract, or no "
                    "long end of its"
                 << " reduced symbol)";
  const auto cases = props::generate_family(op, traits, GetParam(), cases_per_family(), /*seed=*/1);
  ASSERT_FALSE(cases.empty());
  CheckOptions options;
  Runner& runner = runner_for(kernel.backend);
  for (const auto& c : cases) {
    const auto r = runner.check_case(kernel, c, rule_for(op, c.dtype, options));
    EXPECT_NE(r.outcome, Outcome::failed)
        << r.message << "\n  case: " << c.id() << "\n  repro: " << r.repro;
  }
}

INSTANTIATE_TEST_SUITE_P(Kernel, Family, ::testing::ValuesIn(props::all_families()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

/// A mix of every applicable family: an equal share of `total` (at least one case) each, taken as
/// every 4th case of a longer walk, so the ragged cases reach from the smallest sizes past the tile
/// edges.
std::vector<Case> memory_case_mix(const OpSignature& op, const props::KernelTraits& traits,
                                  int64_t total) {
  constexpr int64_t kStride = 4;
  const auto families = props::applicable_families(op, traits);
  const int64_t share = std::max<int64_t>(1, total / static_cast<int64_t>(families.size()));
  std::vector<Case> out;
  for (const auto& family : families) {
    const auto walk = props::generate_family(op, traits, family, share * kStride, /*seed=*/2);
    for (size_t i = 0; i < walk.size(); i += kStride) out.push_back(walk[i]);
  }
  return out;
}

// Every output element written (no poison left), both guard bands intact, every input bit-identical
// — per case, whatever the numeric verdict (a wrong value is the case families' business).
TEST(Kernel, Memory) {
  const KernelInfo& kernel = find_kernel(KGATE_KERNEL_NAME);
  KGATE_SKIP_WITHOUT_DEVICE(kernel);
  const OpSignature& op = find_op(kernel.op);
  const auto cases = memory_case_mix(op, traits_of(kernel), memory_cases());
  ASSERT_FALSE(cases.empty());
  Runner& runner = runner_for(kernel.backend);
  int64_t ran_kernel = 0;
  for (const auto& c : cases) {
    const auto r = runner.check_case(kernel, c, rule_for(op, c.dtype, CheckOptions{}));
    if (!r.fallback) ++ran_kernel;
    EXPECT_TRUE(r.rule != Reason::fault && r.rule != Reason::error)
        << "the memory properties could not be checked\n"
        << describe(r);
    EXPECT_EQ(r.vs_reference.unwritten, 0)
        << "output elements never written (still hold the poison)\n"
        << describe(r);
    EXPECT_TRUE(r.guard_bands_intact) << "the kernel wrote outside its output\n" << describe(r);
    EXPECT_FALSE(r.inputs_modified) << "the kernel modified its input\n" << describe(r);
    if (r.rule ==
        Reason::memory)  // a memory verdict these properties do not explain: fail, never pass
      EXPECT_TRUE(r.vs_reference.unwritten > 0 || !r.guard_bands_intact || r.inputs_modified)
          << "unrecognized memory verdict\n"
          << describe(r);
  }
  EXPECT_GT(ran_kernel, 0) << "every one of the " << cases.size()
                           << " cases fell outside the guard of " << kernel.name
                           << ": the eager reference ran, the kernel never did";
}

// For ops whose contract says deterministic: on one case of each applicable family, two runs give
// bitwise equal outputs (Runner::check_deterministic), and the same shape with other values right
// after also passes (Runner::check_stale). The stale check runs for every op.
TEST(Kernel, Determinism) {
  const KernelInfo& kernel = find_kernel(KGATE_KERNEL_NAME);
  KGATE_SKIP_WITHOUT_DEVICE(kernel);
  const OpSignature& op = find_op(kernel.op);
  const auto traits = traits_of(kernel);
  Runner& runner = runner_for(kernel.backend);
  int64_t compared = 0;
  for (const auto& family : props::applicable_families(op, traits)) {
    // The largest of the family's first cases (races and order-dependent reductions show on long
    // rows; ragged walks start at empty and one-element shapes), at most 2^20 elements an input,
    // or 2^24 for a family that has none so small (softmax_varlen's long rows are 2^21 tokens).
    auto cases = props::generate_family(op, traits, family, 8, /*seed=*/1, int64_t{1} << 20);
    if (cases.empty())
      cases = props::generate_family(op, traits, family, 8, /*seed=*/1, int64_t{1} << 24);
    ASSERT_FALSE(cases.empty()) << family;
    const Case& c = *std::max_element(cases.begin(), cases.end(), [](const Case& a, const Case& b) {
      return a.numel_hint() < b.numel_hint();
    });
    const auto rule = rule_for(op, c.dtype, CheckOptions{});
    const auto stale = runner.check_stale(kernel, c, rule);
    EXPECT_TRUE(stale.outcome != Outcome::failed) << "stale check (" << family << ")\n"
                                                  << describe(stale);
    if (!op.deterministic) continue;
    const auto twice = runner.check_deterministic(kernel, c, rule);
    EXPECT_TRUE(twice.outcome != Outcome::failed) << "determinism check (" << family << ")\n"
                                                  << describe(twice);
    if (!twice.fallback) ++compared;
  }
  if (!op.deterministic)
    GTEST_SKIP() << "op " << op.name << " does not promise bitwise determinism (its signature says "
                 << "deterministic = false): only the stale check ran";
  EXPECT_GT(compared, 0) << "every case fell outside the guard of " << kernel.name
                         << ": no two runs of the kernel itself were compared";
}

}  // namespace
}  // namespace kgate
