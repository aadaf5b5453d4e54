// --sanitize's host logic: reading compute-sanitizer's output and choosing the cases it runs.
#include <gtest/gtest.h>

#include "cli/sanitize.hpp"

namespace kgate::cli {
namespace {

TEST(SanitizerOutput, CountsMemcheckErrorsAndKeepsTheFirstFinding) {
  const std::string text =
      "kgate: softmax_block: 1 case\n"
      "========= COMPUTE-SANITIZER\n"
      "========= Invalid __global__ write of size 4 bytes\n"
      "=========     at softmax_rows(const float *, float *, long long)+0x1f0 in softmax.cu:41\n"
      "=========     by thread (31,0,0) in block (3,0,0)\n"
      "=========     Address 0x7f00001000 is out of bounds\n"
      "=========     Saved host backtrace up to driver entry point at kernel launch time\n"
      "=========         Host Frame: cuLaunchKernel [0x1234] in libcuda.so.1\n"
      "=========\n"
      "========= Invalid __global__ write of size 4 bytes\n"
      "=========     at softmax_rows(const float *, float *, long long)+0x1f0 in softmax.cu:41\n"
      "========= ERROR SUMMARY: 2 errors\n";
  const auto f = parse_sanitizer_output(text);
  EXPECT_TRUE(f.completed);
  EXPECT_EQ(f.errors, 2);
  ASSERT_GE(f.first.size(), 3u);
  EXPECT_EQ(f.first[0], "Invalid __global__ write of size 4 bytes");
  EXPECT_NE(f.first[1].find("softmax.cu:41"), std::string::npos);
  for (const auto& l : f.first) EXPECT_EQ(l.find("Host Frame"), std::string::npos) << l;
}

TEST(SanitizerOutput, ACleanRunHasNoErrors) {
  const auto f = parse_sanitizer_output(
      "========= COMPUTE-SANITIZER\nPASS\n========= ERROR SUMMARY: 0 errors\n");
  EXPECT_TRUE(f.completed);
  EXPECT_EQ(f.errors, 0);
  EXPECT_TRUE(f.first.empty());
  EXPECT_EQ(parse_sanitizer_output("========= ERROR SUMMARY: 1 error\n").errors, 1);
}

TEST(SanitizerOutput, RacecheckHazardsCountAsErrors) {
  const auto f = parse_sanitizer_output(
      "========= Error: Race reported between Write access at k()+0x80 in a.cu:7\n"
      "=========     and Read access at k()+0x90 in a.cu:9 [128 hazards]\n"
      "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n");
  EXPECT_TRUE(f.completed);
  EXPECT_EQ(f.errors, 1);
  ASSERT_FALSE(f.first.empty());
  EXPECT_NE(f.first[0].find("Race reported"), std::string::npos);
}

TEST(SanitizerOutput, ARunThatNeverFinishedSaysWhy) {
  const auto f = parse_sanitizer_output(
      "========= COMPUTE-SANITIZER\n========= Error: Target application terminated before first "
      "instrumented API call\n");
  EXPECT_FALSE(f.completed);
  EXPECT_NE(f.reason.find("terminated before first instrumented"), std::string::npos) << f.reason;
  EXPECT_FALSE(parse_sanitizer_output("").completed);
}

Case make(const std::string& family, int64_t n) {
  Case c = Case::from_id("softmax:f32:B=2,N=" + std::to_string(n) + ":contiguous:normal:1");
  c.family = family;
  return c;
}

TEST(SanitizeSubset, TheLargestCaseOfEachFamilyThenTheOthersWithoutHuge) {
  const std::vector<Case> cases = {make("random", 1), make("random", 2000), make("random", 1 << 21),
                                   make("ragged", 3), make("extreme", 4),   make("huge", 5)};
  auto s = sanitize_subset(cases, 3);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].dim("N"), 2000);  // the largest random case under 2^20 elements (B=2)
  EXPECT_EQ(s[1].dim("N"), 3);
  EXPECT_EQ(s[2].dim("N"), 4);
  s = sanitize_subset(cases, 10);
  ASSERT_EQ(s.size(), 5u);  // every case but the huge one
  for (const auto& c : s) EXPECT_NE(c.family, "huge");
}

}  // namespace
}  // namespace kgate::cli
