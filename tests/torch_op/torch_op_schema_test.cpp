// Schemas as production torch-op libraries write them, bound with a mapping and no adapter
// (runtime/torch_op_plan): Tensor?, Tensor(a!)?, Tensor[], int / SymInt / SymInt[] from shape
// symbols and expressions, str and ScalarType constants, non-tensor and Tensor[] returns, and a
// library registered with STABLE_TORCH_LIBRARY. The libraries are
// tests/torch_op/test_schema_ops.cpp and test_stable_ops.cpp; every op runs on the cpu backend and
// must pass (or fail, where wrong).
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "references/catalogue.hpp"
#include "runtime/pipeline.hpp"
#include "runtime/runner.hpp"
#include "runtime/torch_op.hpp"

namespace kgate {
namespace {

std::string usage_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

class TorchOpSchema : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    load_op_files(KGATE_SOURCE_DIR
                  "/kernels/fused_add_rms_norm/package/fused_add_rms_norm.op.json");
    load_op_files(KGATE_SOURCE_DIR "/kernels/topk/package/topk_last_dim.op.json");
    load_torch_library(KGATE_TEST_SCHEMA_OPS_LIBRARY);
    load_torch_library(KGATE_TEST_STABLE_OPS_LIBRARY);
  }
  static KernelReport check(const std::string& spec, std::string* source = nullptr) {
    const KernelInfo k = torch_op_kernel(parse_torch_op_spec(spec), nullptr);
    if (source) *source = k.source;
    CheckOptions o;
    o.cases = 6;  // binding is under test here, not the op: a few random cases of each dtype
    o.families = {"random"};
    o.speed = false;
    Runner runner(Backend::cpu);
    return check_kernel(runner, k, o);
  }
  static void expect_pass(const std::string& spec) {
    const auto r = check(spec);
    EXPECT_EQ(r.outcome, Outcome::passed) << spec << ": " << r.message;
    EXPECT_GT(r.correctness.cases, 0) << spec;
    EXPECT_EQ(r.correctness.failed, 0) << spec;
  }
};

TEST_F(TorchOpSchema, AnOptionalTensorBindsToTheOpsTensor) {
  expect_pass("cpu/kgate_schema::rms_norm=rms_norm,input=x,epsilon=eps");
}

TEST_F(TorchOpSchema, AnOptionalTensorMappedToNoneIsPassedNone) {
  // rms_norm without a weight is a different function: the op's weight is then bound by nothing.
  const auto e = usage_error([] {
    torch_op_kernel(parse_torch_op_spec("cpu/kgate_schema::rms_norm=rms_norm,input=x,epsilon=eps,"
                                        "weight=None"),
                    nullptr);
  });
  EXPECT_NE(e.find("op rms_norm's input 'weight' is passed by no argument"), std::string::npos)
      << e;
  // A required argument cannot be None.
  const auto r = usage_error([] {
    torch_op_kernel(parse_torch_op_spec("cpu/kgate_schema::rms_norm_sized=rms_norm,weight=None"),
                    nullptr);
  });
  EXPECT_NE(r.find("argument 'weight' is a Tensor, not optional"), std::string::npos) << r;
}

TEST_F(TorchOpSchema, AnIntBindsToAShapeSymbolOrAnExpressionOfThem) {
  expect_pass("cpu/kgate_schema::rms_norm_sized=rms_norm,hidden_size=N");
  expect_pass("cpu/kgate_schema::rms_norm_sized=rms_norm,hidden_size=2*N-N");
  // Bound to the wrong value, the op's own check refuses every case: a failure, not a pass.
  const auto wrong = check("cpu/kgate_schema::rms_norm_sized=rms_norm,hidden_size=N+1");
  EXPECT_EQ(wrong.outcome, Outcome::failed) << wrong.message;
}

TEST_F(TorchOpSchema, AnUnboundIntNamesTheMappingThatWouldBindIt) {
  const auto e = usage_error([] {
    torch_op_kernel(parse_torch_op_spec("cpu/kgate_schema::rms_norm_sized=rms_norm"), nullptr);
  });
  EXPECT_NE(e.find("argument 'hidden_size' (int) maps onto nothing of op rms_norm"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find(",hidden_size=EXPR, a shape symbol of op rms_norm (B, N)"), std::string::npos)
      << e;
  const auto bad = usage_error([] {
    torch_op_kernel(parse_torch_op_spec("cpu/kgate_schema::rms_norm_sized=rms_norm,hidden_size=Q"),
                    nullptr);
  });
  EXPECT_NE(bad.find("'hidden_size' = 'Q' is not an integer expression"), std::string::npos) << bad;
}

TEST_F(TorchOpSchema, ASymIntListAndAStringBindToConstantsAndSymbols) {
  expect_pass("cpu/kgate_schema::layer_norm_shaped=layer_norm,normalized_shape=[N],mode='exact'");
  const auto wrong =
      check("cpu/kgate_schema::layer_norm_shaped=layer_norm,normalized_shape=[N],mode='fast'");
  EXPECT_EQ(wrong.outcome, Outcome::failed);
  const auto e = usage_error([] {
    torch_op_kernel(
        parse_torch_op_spec("cpu/kgate_schema::layer_norm_shaped=layer_norm,normalized_shape=N"),
        nullptr);
  });
  EXPECT_NE(e.find(",normalized_shape=[EXPR;EXPR...]"), std::string::npos) << e;
}

TEST_F(TorchOpSchema, AnOptionalWrittenTensorIsWrittenInPlace) {
  expect_pass("cpu/kgate_schema::fused_add_rms_norm=fused_add_rms_norm");
}

TEST_F(TorchOpSchema, ATensorListBindsOpInputs) {
  expect_pass("cpu/kgate_schema::rms_norm_list=rms_norm,xw=[x;weight]");
  const auto e = usage_error([] {
    torch_op_kernel(parse_torch_op_spec("cpu/kgate_schema::rms_norm_list=rms_norm,xw=[x;w]"),
                    nullptr);
  });
  EXPECT_NE(e.find("argument 'xw' lists 'w', which is no input of op rms_norm"), std::string::npos)
      << e;
}

TEST_F(TorchOpSchema, AScalarTypeBindsToATensorsDtype) {
  expect_pass("cpu/kgate_schema::softmax_typed=softmax,out_dtype=dtype(y)");
  expect_pass("cpu/kgate_schema::softmax_typed=softmax,out_dtype=dtype(x)");
  // A constant dtype: right for f32 cases only, so the f16 and bf16 cases fail.
  const auto fixed = check("cpu/kgate_schema::softmax_typed=softmax,out_dtype=torch.float32");
  EXPECT_EQ(fixed.outcome, Outcome::failed);
}

TEST_F(TorchOpSchema, ANonTensorReturnIsNotJudged) {
  expect_pass("cpu/kgate_schema::softmax_counted=softmax");
}

TEST_F(TorchOpSchema, ATensorListReturnFillsTheOutputsAndKComesFromAnOutputShape) {
  expect_pass("cpu/kgate_schema::topk=topk_last_dim,k=K");
}

TEST_F(TorchOpSchema, AStableTorchLibraryOpBindsAndPasses) {
  std::string source;
  const auto r = check("cpu/kgate_stable::rms_norm=rms_norm", &source);
  EXPECT_EQ(r.outcome, Outcome::passed) << r.message;
  EXPECT_NE(source.find("kgate_stable::rms_norm(Tensor x, Tensor? weight, float eps)"),
            std::string::npos)
      << source;
}

}  // namespace
}  // namespace kgate
