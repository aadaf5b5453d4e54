// Bounded output records: small output is kept whole, a flood keeps its first and last lines.
#include "core/output_capture.hpp"

#include <gtest/gtest.h>

#include <string>

namespace kgate {
namespace {

TEST(OutputCapture, SmallOutputIsKeptWhole) {
  OutputCapture c(64, 64);
  c.add("one\n");
  c.add("two\n");
  EXPECT_EQ(c.text(), "one\ntwo\n");
  EXPECT_EQ(c.total_bytes(), 8u);
  EXPECT_EQ(c.dropped_bytes(), 0u);
}

TEST(OutputCapture, AFloodKeepsHeadAndTail) {
  OutputCapture c(100, 100);
  for (int i = 0; i < 100000; ++i) c.add("line " + std::to_string(i) + "\n");
  const std::string t = c.text();
  EXPECT_EQ(t.rfind("line 0\nline 1\n", 0), 0u) << t;
  EXPECT_NE(t.find("line 99999\n"), std::string::npos) << t;
  EXPECT_NE(t.find(" lines) of output dropped ...]\n"), std::string::npos) << t;
  EXPECT_LT(t.size(), 300u);
  EXPECT_EQ(c.total_lines(), 100000u);
  EXPECT_EQ(c.dropped_bytes(), c.total_bytes() - 200);
}

TEST(OutputCapture, OneHugeWriteWithoutNewlines) {
  OutputCapture c(10, 10);
  c.add(std::string(1000000, 'x'));
  const std::string t = c.text();
  EXPECT_EQ(t, "xxxxxxxxxx\n[... 999980 bytes (0 lines) of output dropped ...]\nxxxxxxxxxx");
}

}  // namespace
}  // namespace kgate
