// The message of the usage Error a call throws (kgate::Error of kind usage); a test fails where the
// call throws none, or an Error of another kind.
//   EXPECT_NE(usage_error([&] { parse(...); }).find("expected"), std::string::npos);
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/error.hpp"

namespace kgate::testing {

inline std::string usage_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

}  // namespace kgate::testing
