// Torch custom ops as candidates (runtime/torch_op): loading a TORCH_LIBRARY shared library,
// finding an op by its schema, mapping the schema onto an op, and gating it on the cpu backend like
// any kernel. The library is tests/torch_op/test_ops.cpp (KGATE_TEST_OPS_LIBRARY); its twin built
// with the other C++ ABI is KGATE_TEST_OPS_OLD_ABI_LIBRARY.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "references/catalogue.hpp"
#include "runtime/pipeline.hpp"
#include "runtime/runner.hpp"
#include "runtime/torch_op.hpp"
#include "tests/support/usage_error.hpp"

namespace kgate {
namespace {

using testing::usage_error;

class TorchOp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    load_op_files(KGATE_SOURCE_DIR
                  "/kernels/fused_add_rms_norm/package/fused_add_rms_norm.op.json");
    load_torch_library(KGATE_TEST_OPS_LIBRARY);
  }
  static CheckOptions options() {
    CheckOptions o;
    o.cases = 24;
    o.speed = false;
    return o;
  }
};

TEST_F(TorchOp, SpecsParse) {
  const auto s = parse_torch_op_spec("cpu/mylib::rms.out=rms_norm,input=x,epsilon=eps");
  EXPECT_EQ(s.backend, Backend::cpu);
  EXPECT_EQ(s.schema_name, "mylib::rms");
  EXPECT_EQ(s.overload, "out");
  EXPECT_EQ(s.op, "rms_norm");
  ASSERT_EQ(s.mapping.size(), 2u);
  EXPECT_EQ(s.mapping[1].first, "epsilon");
  EXPECT_EQ(s.mapping[1].second, "eps");
  EXPECT_EQ(parse_torch_op_spec("mylib::rms=rms_norm").backend, Backend::cuda);
  for (const char* bad : {"mylib::rms", "rms=rms_norm", "mylib::rms=", "mylib::rms=rms_norm,input"})
    EXPECT_NE(usage_error([&] { parse_torch_op_spec(bad); }).find("NAMESPACE::OP"),
              std::string::npos)
        << bad;
}

TEST_F(TorchOp, AMissingLibraryIsAUsageError) {
  const auto e = usage_error([] { load_torch_library("/nonexistent/libops.so"); });
  EXPECT_NE(e.find("/nonexistent/libops.so does not exist"), std::string::npos) << e;
}

TEST_F(TorchOp, ALibraryOfAnotherTorchAbiIsNamedAsSuch) {
  const auto e = usage_error([] { load_torch_library(KGATE_TEST_OPS_OLD_ABI_LIBRARY); });
  EXPECT_NE(e.find("could not be loaded"), std::string::npos) << e;
  EXPECT_NE(e.find("built against another torch"), std::string::npos) << e;
}

TEST_F(TorchOp, AnUnknownOpListsTheNamespacesOps) {
  const auto e = usage_error(
      [] { torch_op_kernel(parse_torch_op_spec("cpu/kgate_test::nope=softmax"), nullptr); });
  EXPECT_NE(e.find("no op kgate_test::nope is registered"), std::string::npos) << e;
  EXPECT_NE(e.find("kgate_test::softmax_out"), std::string::npos) << e;
}

TEST_F(TorchOp, AnUnmappableSchemaNamesTheArgument) {
  const auto e = usage_error([] {
    torch_op_kernel(parse_torch_op_spec("cpu/kgate_test::softmax_renamed=softmax"), nullptr);
  });
  EXPECT_NE(e.find("argument 'q' maps onto nothing of op softmax"), std::string::npos) << e;
  EXPECT_NE(e.find(",q=NAME"), std::string::npos) << e;
  // A written argument mapped onto a read-only input, and a mapping naming no argument.
  const auto w = usage_error([] {
    torch_op_kernel(parse_torch_op_spec("cpu/kgate_test::softmax_out=softmax,out=x"), nullptr);
  });
  EXPECT_NE(w.find("'out' is written (Tensor(a!)) but op softmax's input 'x' is read only"),
            std::string::npos)
      << w;
  const auto m = usage_error([] {
    torch_op_kernel(parse_torch_op_spec("cpu/kgate_test::softmax_out=softmax,nothing=x"), nullptr);
  });
  EXPECT_NE(m.find("'nothing', which is no argument of the schema"), std::string::npos) << m;
}

TEST_F(TorchOp, AnExplicitMappingBindsRenamedArguments) {
  std::string note = "unset";
  const KernelInfo k =
      torch_op_kernel(parse_torch_op_spec("cpu/kgate_test::softmax_renamed=softmax,q=x"), &note);
  EXPECT_EQ(k.name, "kgate_test.softmax_renamed.cpu");
  EXPECT_NE(note.find("returns new tensors"), std::string::npos) << note;
  Runner runner(Backend::cpu);
  const auto report = check_kernel(runner, k, options());
  EXPECT_EQ(report.outcome, Outcome::passed) << report.message;
  EXPECT_EQ(report.correctness.failed, 0);
}

TEST_F(TorchOp, AnOutVariantGetsEveryMemoryCheckAndPasses) {
  std::string note = "unset";
  const KernelInfo k =
      torch_op_kernel(parse_torch_op_spec("cpu/kgate_test::softmax_out=softmax"), &note);
  EXPECT_EQ(note, "");
  Runner runner(Backend::cpu);
  const auto report = check_kernel(runner, k, options());
  EXPECT_EQ(report.outcome, Outcome::passed) << report.message;
  EXPECT_GT(report.correctness.cases, 0);
  EXPECT_EQ(report.correctness.failed, 0);
}

TEST_F(TorchOp, AnOutVariantThatSkipsAColumnIsCaughtAsUnwritten) {
  const KernelInfo k =
      torch_op_kernel(parse_torch_op_spec("cpu/kgate_test::softmax_tail_out=softmax"), nullptr);
  Runner runner(Backend::cpu);
  const auto report = check_kernel(runner, k, options());
  EXPECT_EQ(report.outcome, Outcome::failed);
  ASSERT_TRUE(report.correctness.minimal.has_value());
  EXPECT_NE(report.correctness.minimal->message.find("never written"), std::string::npos)
      << report.correctness.minimal->message;
}

TEST_F(TorchOp, AnInPlaceOpWithAReturnedOutputPassesAndSaysWhatWasChecked) {
  std::string note;
  const KernelInfo k = torch_op_kernel(
      parse_torch_op_spec("cpu/kgate_test::fused_add_rms_norm=fused_add_rms_norm"), &note);
  EXPECT_NE(note.find("not unwritten elements or guard bands"), std::string::npos) << note;
  Runner runner(Backend::cpu);
  const auto report = check_kernel(runner, k, options());
  EXPECT_EQ(report.outcome, Outcome::passed) << report.message;
  EXPECT_GT(report.correctness.cases, 0);
}

}  // namespace
}  // namespace kgate
