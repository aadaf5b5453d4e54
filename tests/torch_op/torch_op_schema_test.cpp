// Schemas as production torch-op libraries write them, bound with a mapping and no adapter
// (runtime/torch_op_plan): Tensor?, Tensor(a!)?, Tensor[], int / SymInt / SymInt[] from shape
// symbols and expressions, str and ScalarType constants, non-tensor and Tensor[] returns, and a
// library registered with STABLE_TORCH_LIBRARY. The libraries are
// tests/torch_op/test_schema_ops.cpp and test_stable_ops.cpp; every op runs on the cpu backend and
// must pass (or fail, where wrong).
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "core/config.hpp"
#include "core/error.hpp"
#include "references/catalogue.hpp"
#include "runtime/pipeline.hpp"
#include "runtime/runner.hpp"
#include "runtime/torch_op.hpp"
#include "tests/support/usage_error.hpp"

namespace kgate {
namespace {

using testing::usage_error;

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

TEST_F(TorchOpSchema, AnUnnamedWrittenTensorIsWrittenAndPrintedAsTheLibraryWroteIt) {
  std::string source;
  const auto r = check("cpu/kgate_schema::gelu_into=gelu,out=y,input=x", &source);
  EXPECT_EQ(r.outcome, Outcome::passed) << r.message;
  EXPECT_NE(source.find("gelu_into(Tensor! out, Tensor input) -> ()"), std::string::npos) << source;
}

TEST_F(TorchOpSchema, OneOpGivenWithTwoMappingsIsTwoKernelsNamedByTheirDifference) {
  const std::string a = "cpu/kgate_schema::rms_norm_sized=rms_norm,hidden_size=N,eps=eps";
  const std::string b = "cpu/kgate_schema::rms_norm_sized=rms_norm,hidden_size=N,eps=1e-3";
  add_torch_ops({KGATE_TEST_SCHEMA_OPS_LIBRARY}, {a, b});
  EXPECT_EQ(find_kernel("kgate_schema.rms_norm_sized.cpu[eps=eps]").op, "rms_norm");
  EXPECT_EQ(find_kernel("kgate_schema.rms_norm_sized.cpu[eps=1e-3]").op, "rms_norm");
  // Each replays with both specs, which give it its name.
  const std::string repro = torch_op_repro_options("kgate_schema.rms_norm_sized.cpu[eps=1e-3]");
  EXPECT_NE(repro.find("--torch-op '" + a + "'"), std::string::npos) << repro;
  EXPECT_NE(repro.find("--torch-op '" + b + "'"), std::string::npos) << repro;
  // The same spec twice is an error, not two kernels.
  const std::string c = "cpu/kgate_schema::softmax_typed=softmax,out_dtype=dtype(y)";
  const auto e = usage_error([&] { add_torch_ops({}, {c, c}); });
  EXPECT_NE(e.find("is given twice"), std::string::npos) << e;
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

// Contracts (core/contract.hpp, gates/correctness/contract.hpp) on three ops that meet a strided
// input differently: one refuses it with TORCH_CHECK, one computes wrong on it, one refuses odd
// hidden sizes it may or may not declare.
class TorchOpContract : public TorchOpSchema {
 protected:
  static KernelReport check_under(const std::string& spec, const std::string& kernel_settings) {
    const KernelInfo k = torch_op_kernel(parse_torch_op_spec(spec), nullptr);
    CheckOptions o;
    o.cases = 24;
    o.families = {"random", "layout", "ragged"};
    o.speed = false;
    if (!kernel_settings.empty())
      o.config =
          parse_config(nlohmann::json::parse(R"({"format": "kgate-config/1", "kernels": {")" +
                                             k.name + "\": " + kernel_settings + "}}"),
                       "test.json", {"allclose", "eager_relative", "conditioned"});
    Runner runner(Backend::cpu);
    return check_kernel(runner, k, o);
  }
  static std::string all_messages(const KernelReport& r) {
    std::string out = r.message;
    for (const auto& f : r.correctness.failures) out += "\n" + f.message;
    for (const auto& w : r.correctness.warnings) out += "\n" + w;
    return out;
  }
};

TEST_F(TorchOpContract, ARefusalIsNeverAGpuFaultAndWithoutAContractTheHintNamesOne) {
  const auto r = check_under("cpu/kgate_schema::rms_norm_strided_refused=rms_norm", "");
  EXPECT_EQ(r.outcome, Outcome::failed);
  const std::string m = all_messages(r);
  EXPECT_NE(m.find("refused the case: "), std::string::npos) << m;
  EXPECT_NE(m.find("x must be contiguous"), std::string::npos) << m;
  EXPECT_EQ(m.find("faulted"), std::string::npos) << m;
  ASSERT_TRUE(r.correctness.minimal.has_value());
  EXPECT_EQ(r.correctness.minimal->rule, Reason::refused);
  // Strided and row-padded inputs failed, contiguous and offset ones passed: the hint says so.
  EXPECT_NE(m.find("failed only on row_padded inputs, strided inputs"), std::string::npos) << m;
  EXPECT_NE(m.find(R"("contract": {"layouts":["contiguous","offset"]})"), std::string::npos) << m;
}

TEST_F(TorchOpContract, ACleanRefusalOutsideTheContractPasses) {
  const auto r = check_under("cpu/kgate_schema::rms_norm_strided_refused=rms_norm",
                             R"({"contract": {"layouts": ["contiguous", "offset"]}})");
  EXPECT_EQ(r.outcome, Outcome::passed) << all_messages(r);
  ASSERT_TRUE(r.correctness.contract.is_object());
  EXPECT_GT(r.correctness.contract.at("outside").get<int64_t>(), 0);
  EXPECT_EQ(r.correctness.contract.at("refused"), r.correctness.contract.at("outside"));
  EXPECT_EQ(r.correctness.contract.at("wrong").get<int64_t>(), 0);
}

TEST_F(TorchOpContract, WrongValuesOutsideTheContractAreAFindingOfTheirOwn) {
  const std::string contract = R"({"contract": {"layouts": ["contiguous", "offset"]})";
  const auto r = check_under("cpu/kgate_schema::rms_norm_strided_wrong=rms_norm", contract + "}");
  EXPECT_EQ(r.outcome, Outcome::failed);
  const std::string m = all_messages(r);
  EXPECT_NE(m.find("returns wrong values for inputs outside its contract (layout "),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("add a check that refuses them"), std::string::npos) << m;
  EXPECT_GT(r.correctness.contract.at("wrong").get<int64_t>(), 0);
  for (const auto& f : r.correctness.failures)
    EXPECT_FALSE(f.outside_contract.empty()) << f.message;
  // One config key makes it a warning.
  const auto w = check_under("cpu/kgate_schema::rms_norm_strided_wrong=rms_norm",
                             contract + R"(, "outside_contract": "warn"})");
  EXPECT_EQ(w.outcome, Outcome::passed) << all_messages(w);
  EXPECT_NE(all_messages(w).find("returns wrong values for inputs outside its contract"),
            std::string::npos);
}

TEST_F(TorchOpContract, ARefusalInsideTheContractIsAFailure) {
  const auto inside = check_under("cpu/kgate_schema::rms_norm_throws_inside=rms_norm",
                                  R"({"contract": {"layouts": ["contiguous"]}})");
  EXPECT_EQ(inside.outcome, Outcome::failed);
  EXPECT_NE(all_messages(inside).find("refused an input it declares it accepts: "),
            std::string::npos)
      << all_messages(inside);
  // The relation stated, the odd sizes are outside: refused cleanly there, and the boundary cases
  // of the relation (both sides of N % 2 == 0) were run.
  const auto stated = check_under(
      "cpu/kgate_schema::rms_norm_throws_inside=rms_norm",
      R"({"contract": {"layouts": ["contiguous", "row_padded", "offset", "strided"], "require": ["N % 2 == 0"]}})");
  EXPECT_EQ(stated.outcome, Outcome::passed) << all_messages(stated);
  EXPECT_GT(stated.correctness.contract.at("refused").get<int64_t>(), 0);
}

TEST_F(TorchOpContract, AContractNamingAnUnknownSymbolIsAUsageError) {
  const auto e = usage_error([] {
    check_under("cpu/kgate_schema::rms_norm_throws_inside=rms_norm",
                R"({"contract": {"require": ["H % 8 == 0"]}})");
  });
  EXPECT_NE(e.find("the contract of kernel 'kgate_schema.rms_norm_throws_inside.cpu'.require[0]"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace kgate
