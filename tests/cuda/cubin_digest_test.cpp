// Per-function CUBIN digests (runtime/cuda/cubin_digest.hpp) on CUBINs nvcc made at build time from
// tests/cuda/cubin/two_kernels.cu in variants, and the comparison of launch records: no GPU needed.
#include "runtime/cuda/cubin_digest.hpp"
#include "runtime/cuda/launch_record.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace kgate::cuda {
namespace {

const char* const kWithCallee = "_Z11with_calleePfPKfi";
const char* const kWithShared = "_Z11with_sharedPfi";

CubinFunctions digests_of(const std::string& variant) {
  std::ifstream in(std::string(KGATE_TEST_CUBINS) + "/" + variant + ".cubin", std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  EXPECT_FALSE(bytes.str().empty()) << variant << ".cubin was not built";
  CubinFunctions f = cubin_function_digests(bytes.str());
  EXPECT_EQ(f.error, "") << variant;
  return f;
}

TEST(CubinDigest, EveryFunctionWithCodeHasADigest) {
  const auto base = digests_of("base");
  ASSERT_EQ(base.digests.size(), 2u);
  EXPECT_EQ(base.digests.count(kWithCallee), 1u);
  EXPECT_EQ(base.digests.count(kWithShared), 1u);
  EXPECT_NE(base.digests.at(kWithCallee), base.digests.at(kWithShared));
  EXPECT_EQ(base.digests.at(kWithCallee).size(), 64u);
}

TEST(CubinDigest, LineInformationAndTheDirectoryDoNotCount) {
  const auto base = digests_of("base");
  EXPECT_EQ(digests_of("lineinfo").digests, base.digests);
  // Its line tables name another directory: still the same SASS.
  EXPECT_EQ(digests_of("lineinfo_elsewhere").digests, base.digests);
}

TEST(CubinDigest, AChangedCalleeChangesItsCallerOnly) {
  const auto base = digests_of("base"), helper = digests_of("helper");
  EXPECT_NE(helper.digests.at(kWithCallee), base.digests.at(kWithCallee));
  EXPECT_EQ(helper.digests.at(kWithShared), base.digests.at(kWithShared));
}

TEST(CubinDigest, AChangedCalleeInItsOwnSectionIsReachedThroughRelocations) {
  // With -rdc the callee keeps a section of its own; the caller's relocations name it.
  const auto rdc = digests_of("rdc"), changed = digests_of("rdc_helper");
  ASSERT_EQ(rdc.digests.count("_Z6helperf"), 1u);
  EXPECT_NE(changed.digests.at("_Z6helperf"), rdc.digests.at("_Z6helperf"));
  EXPECT_NE(changed.digests.at(kWithCallee), rdc.digests.at(kWithCallee));
  EXPECT_EQ(changed.digests.at(kWithShared), rdc.digests.at(kWithShared));
}

TEST(CubinDigest, ChangedConstantDataChangesEveryFunction) {
  const auto base = digests_of("base"), table = digests_of("table");
  EXPECT_NE(table.digests.at(kWithCallee), base.digests.at(kWithCallee));
  EXPECT_NE(table.digests.at(kWithShared), base.digests.at(kWithShared));
}

TEST(CubinDigest, AnotherKernelInTheFileLeavesTheOthersAlone) {
  const auto base = digests_of("base"), extra = digests_of("extra");
  EXPECT_EQ(extra.digests.size(), 3u);
  EXPECT_EQ(extra.digests.at(kWithCallee), base.digests.at(kWithCallee));
  EXPECT_EQ(extra.digests.at(kWithShared), base.digests.at(kWithShared));
}

TEST(CubinDigest, BytesThatAreNotACubinAreRefusedWithAReason) {
  EXPECT_EQ(cubin_function_digests("").error, "not an ELF file");
  EXPECT_EQ(cubin_function_digests("\x7f"
                                   "ELF")
                .error,
            "not an ELF file");
  std::ifstream in(std::string(KGATE_TEST_CUBINS) + "/base.cubin", std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  std::string cut = bytes.str().substr(0, 200);  // the section headers are at the end
  const auto f = cubin_function_digests(cut);
  EXPECT_NE(f.error, "");
  EXPECT_TRUE(f.digests.empty());
}

}  // namespace
}  // namespace kgate::cuda

namespace kgate::cuda {
namespace {

LaunchRecord record(std::vector<std::string> lines) {
  LaunchRecord r;
  r.known = true;
  r.launches = std::move(lines);
  return r;
}

TEST(SameLaunches, EqualSequencesAreTheSame) {
  std::string why = "untouched";
  EXPECT_TRUE(same_launches(record({"launch k code=ab grid=1,1,1"}),
                            record({"launch k code=ab grid=1,1,1"}), &why));
  EXPECT_EQ(why, "untouched");
}

TEST(SameLaunches, TheFirstDifferenceIsNamed) {
  std::string why;
  EXPECT_FALSE(same_launches(record({"launch a", "launch k grid=1,1,1"}),
                             record({"launch a", "launch k grid=2,1,1"}), &why));
  EXPECT_EQ(why, "launch 2: 'launch k grid=1,1,1' against 'launch k grid=2,1,1'");
  EXPECT_FALSE(same_launches(record({"launch a"}), record({"launch a", "cudaMemsetAsync"}), &why));
  EXPECT_EQ(why, "1 launches against 2");
}

TEST(SameLaunches, AnUnknownOrAmbiguousRecordIsNeverTheSame) {
  std::string why;
  LaunchRecord unknown;
  unknown.why = "a profiler holds CUPTI";
  EXPECT_FALSE(same_launches(unknown, unknown, &why));
  EXPECT_EQ(why, "not recorded: a profiler holds CUPTI");
  LaunchRecord ambiguous = record({"launch k code=ambiguous"});
  ambiguous.ambiguous = true;
  ambiguous.why = "kernel k is held with different code by 2 loaded modules";
  EXPECT_FALSE(same_launches(ambiguous, ambiguous, &why));
  EXPECT_EQ(why, ambiguous.why);
}

TEST(LaunchRecorder, WithoutAGpuNothingIsRecordedAndTheRecordSaysWhy) {
  // On a machine without a driver CUPTI cannot subscribe or no launch happens: either way the
  // record is not a proof of anything unless it is known.
  LaunchRecorder recorder;
  const LaunchRecord r = recorder.stop();
  if (!r.known) EXPECT_FALSE(r.why.empty());
  else EXPECT_TRUE(r.launches.empty());
}

}  // namespace
}  // namespace kgate::cuda
