// Untrusted text on its way to a log: quoting, escaping, workflow commands, caps.
#include "core/safe_text.hpp"

#include <gtest/gtest.h>

#include <string>

namespace kgate {
namespace {

TEST(SafeText, QuotesLikeJsonForPlainText) {
  EXPECT_EQ(quote_untrusted("softmax_rows"), "\"softmax_rows\"");
  EXPECT_EQ(quote_untrusted("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(quote_untrusted("é ü 日本"), "\"é ü 日本\"");  // valid UTF-8 stays
}

TEST(SafeText, EscapesControlsAndBadBytes) {
  EXPECT_EQ(quote_untrusted(std::string("a\0b", 3)), "\"a\\u0000b\"");
  EXPECT_EQ(quote_untrusted("\x1b[31mred\n"), "\"\\u001b[31mred\\n\"");
  EXPECT_EQ(quote_untrusted("x\xff\xfey"), "\"x\\xff\\xfey\"");
  EXPECT_EQ(quote_untrusted("\xc0\xaf"), "\"\\xc0\\xaf\"");           // overlong '/'
  EXPECT_EQ(quote_untrusted("\xed\xa0\x80"), "\"\\xed\\xa0\\x80\"");  // a surrogate
  EXPECT_EQ(quote_untrusted("\xc2\x9b"), "\"\\u009b\"");              // C1 CSI
  EXPECT_EQ(valid_utf8("ok\xffok"), "ok\\xffok");
  EXPECT_EQ(inline_untrusted("a\nb"), "a\\nb");
}

TEST(SafeText, CutsLongValues) {
  const std::string q = quote_untrusted(std::string(40000, 'v'), 10);
  EXPECT_EQ(q, "\"vvvvvvvvvv\"...(40000 bytes)");
}

TEST(SafeText, LogTextCannotRunWorkflowCommands) {
  const std::string out =
      safe_log_text("fine\n::add-mask::secret\n  ::error::x\nok ::not-at-start\n");
  EXPECT_EQ(out, "fine\n| ::add-mask::secret\n|   ::error::x\nok ::not-at-start\n");
  EXPECT_EQ(safe_log_text("::stop-commands::tok"), "| ::stop-commands::tok");
  EXPECT_EQ(safe_log_text("tab\there\x1b[2J"), "tab\there\\u001b[2J");
}

TEST(SafeText, LogTextIsCappedHeadAndTail) {
  std::string big;
  for (int i = 0; i < 10000; ++i) big += "line " + std::to_string(i) + "\n";
  const std::string out = safe_log_text(big, 1000);
  EXPECT_LT(out.size(), 1100u);
  EXPECT_EQ(out.rfind("line 0\n", 0), 0u);
  EXPECT_NE(out.find("line 9999\n"), std::string::npos);
  EXPECT_NE(out.find("bytes dropped"), std::string::npos);
}

TEST(SafeText, JoinListsAndCapsWithTheCount) {
  EXPECT_EQ(join({}), "");
  EXPECT_EQ(join({"a"}), "a");
  EXPECT_EQ(join({"a", "b", "c"}), "a, b, c");
  EXPECT_EQ(join({"a", "b"}, " or "), "a or b");
  EXPECT_EQ(join({"a", "b", "c"}, ", ", 2), "a, b, ... (3 in all)");
  EXPECT_EQ(join({"a", "b"}, ", ", 2), "a, b");
}

}  // namespace
}  // namespace kgate
