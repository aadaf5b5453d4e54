// A torch-op library that is a Python extension module (tests/torch_op/test_python_module_ops.cpp:
// PyModule_Create2 undefined) loads with the libpython of kgate's torch, says so on its report, and
// passes; where no libpython can be found the error names KGATE_LIBPYTHON. Each test runs in a
// process of its own (gtest_discover_tests): a libpython loaded once stays loaded.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "runtime/pipeline.hpp"
#include "runtime/runner.hpp"
#include "runtime/torch_op.hpp"

namespace kgate {
namespace {

TEST(TorchOpPythonModule, LoadsWithTheLibpythonOfKgatesTorchAndSaysSo) {
  unsetenv("KGATE_LIBPYTHON");
  try {
    load_torch_library(KGATE_TEST_PYTHON_MODULE_LIBRARY);
  } catch (const Error& e) {
    // A Python built without a shared libpython has none to load: said, not passed.
    if (std::string(e.what()).find("kgate found no libpython") != std::string::npos)
      GTEST_SKIP() << "this machine's Python has no shared libpython: " << e.what();
    FAIL() << e.what();
  }
  const KernelInfo k = torch_op_kernel(parse_torch_op_spec("cpu/kgate_pymod::gelu=gelu"), nullptr);
  CheckOptions o;
  o.cases = 6;
  o.families = {"random"};
  o.speed = false;
  Runner runner(Backend::cpu);
  const KernelReport r = check_kernel(runner, k, o);
  EXPECT_EQ(r.outcome, Outcome::passed) << r.message;
  bool said = false;
  for (const auto& w : r.correctness.warnings)
    said = said || (w.find("is a Python extension module") != std::string::npos &&
                    w.find("libpython") != std::string::npos);
  EXPECT_TRUE(said) << "no warning says that libpython was loaded";
}

TEST(TorchOpPythonModule, WithoutALibpythonTheErrorNamesTheSettingThatGivesOne) {
  setenv("KGATE_LIBPYTHON", "/nonexistent/libpython3.99.so.1.0", 1);
  try {
    load_torch_library(KGATE_TEST_PYTHON_MODULE_LIBRARY);
    FAIL() << "loaded without a libpython";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(what.find("undefined symbol: PyModule_Create2"), std::string::npos) << what;
    EXPECT_NE(what.find("Python extension module"), std::string::npos) << what;
    EXPECT_NE(what.find("/nonexistent/libpython3.99.so.1.0"), std::string::npos) << what;
    EXPECT_NE(what.find("set KGATE_LIBPYTHON"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace kgate
