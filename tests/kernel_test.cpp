// The GoogleTest target of one kernel (kgate_add_kernel builds it with KGATE_KERNEL_NAME): one test
// per property family. CUDA kernels report SKIPPED (visibly) on machines without a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "references/catalogue.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/pipeline.hpp"

namespace kgate {
namespace {

int64_t cases_per_family() {
  const char* v = std::getenv("KGATE_TEST_CASES");
  return v ? std::max(1, std::atoi(v)) : 24;
}

Runner& runner_for(Backend backend) {
  static std::unique_ptr<Runner> runner;
  if (!runner) runner = std::make_unique<Runner>(backend);
  return *runner;
}

class Family : public ::testing::TestWithParam<std::string> {};

TEST_P(Family, AllCasesPass) {
  const KernelInfo& kernel = find_kernel(KGATE_KERNEL_NAME);
  std::string why;
  if (kernel.backend == Backend::cuda && !cuda::device_available(&why)) GTEST_SKIP() << why;
  const OpSignature& op = find_op(kernel.op);
  const auto traits = traits_of(kernel);
  const auto families = props::applicable_families(op, traits);
  if (std::find(families.begin(), families.end(), GetParam()) == families.end())
    GTEST_SKIP() << "family '" << GetParam() << "' does not apply to " << kernel.name
                 << " (it declares no strided/unaligned support, or the op has no NaN contract)";
  const auto cases = props::generate_family(op, traits, GetParam(), cases_per_family(), /*seed=*/1);
  ASSERT_FALSE(cases.empty());
  CheckOptions options;
  Runner& runner = runner_for(kernel.backend);
  for (const auto& c : cases) {
    const auto r = runner.check_case(kernel, c, rule_for(op, c.dtype, options));
    EXPECT_NE(r.outcome, Outcome::failed) << r.message << "\n  case: " << c.id() << "\n  repro: " << r.repro;
  }
}

INSTANTIATE_TEST_SUITE_P(Kernel, Family, ::testing::ValuesIn(props::all_families()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace kgate
