// The config file: precedence global < op < kernel < command line, and exact error messages.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/config.hpp"
#include "core/error.hpp"
#include "gates/correctness/rules.hpp"

namespace kgate {
namespace {

const char* kConfig = R"({
  "format": "kgate-config/1",
  "global": {"cases": 64, "rule": "allclose", "rtol": 1e-3, "delta": 0.02},
  "ops": {"softmax": {"tolerance": {"bf16": {"rtol": 0.02}}, "cases": 100}},
  "kernels": {"softmax_block": {"cases": 128, "delta": 0.03, "tolerance": {"bf16": {"atol": 1e-4}}}}
})";

TEST(Config, PrecedenceGlobalOpKernelCli) {
  const auto cfg =
      parse_config(nlohmann::json::parse(kConfig), "kgate.config.json", correctness::rule_names());
  auto s = cfg.resolve("softmax", "softmax_block", {});
  EXPECT_EQ(*s.cases, 128);                                     // kernel beats op beats global
  EXPECT_EQ(*s.rule, "allclose");                               // global
  EXPECT_DOUBLE_EQ(*s.delta, 0.03);                             // kernel
  EXPECT_DOUBLE_EQ(*s.tolerance.at(DType::bf16).second, 0.02);  // op
  EXPECT_DOUBLE_EQ(*s.tolerance.at(DType::bf16).first, 1e-4);   // kernel
  GateSettings cli;
  cli.cases = 5;
  cli.rtol = 0.5;
  s = cfg.resolve("softmax", "softmax_block", cli);
  EXPECT_EQ(*s.cases, 5);
  EXPECT_DOUBLE_EQ(*s.rtol, 0.5);
  EXPECT_FALSE(
      s.tolerance.at(DType::bf16).second.has_value());  // a blanket CLI rtol wins over per-dtype
  s = cfg.resolve("layer_norm", "other", {});
  EXPECT_EQ(*s.cases, 64);
  EXPECT_DOUBLE_EQ(*s.rtol, 1e-3);
}

std::string error_of(const std::string& text) {
  try {
    parse_config(nlohmann::json::parse(text), "cfg.json", correctness::rule_names());
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Config, ErrorsNameFileFieldAndExpectation) {
  EXPECT_EQ(error_of(R"({"global": {}})"),
            "cfg.json: format: expected \"kgate-config/1\", found nothing");
  EXPECT_EQ(error_of(R"({"format": "kgate-config/1", "globals": {}})"),
            "cfg.json: globals: unknown key; expected one of format, global, ops, kernels, "
            "op_files, torch_libraries, torch_ops");
  EXPECT_EQ(error_of(R"({"format": "kgate-config/1", "op_files": "ops"})"),
            "cfg.json: op_files: expected an array of op files or directories (as --ops takes)");
  EXPECT_EQ(error_of(R"({"format": "kgate-config/1", "op_files": [3]})"),
            "cfg.json: op_files[0]: expected a path, found 3");
  EXPECT_EQ(
      error_of(R"({"format": "kgate-config/1", "ops": {"softmax": {"tolerance": {"f8": {}}}}})"),
      "cfg.json: ops.softmax.tolerance.f8: unknown dtype; expected f16, bf16, f32 or f64");
  EXPECT_EQ(error_of(R"({"format": "kgate-config/1", "kernels": {"k": {"alpha": 0.9}}})"),
            "cfg.json: kernels.k.alpha: expected a number in (0, 0.5), found 0.9");
  EXPECT_EQ(error_of(R"({"format": "kgate-config/1", "global": {"rule": "close"}})"),
            "cfg.json: global.rule: expected \"allclose\", \"ulp\", \"ref_ratio\", "
            "\"eager_relative\" or \"conditioned\", found \"close\"");
  EXPECT_EQ(error_of(R"({"format": "kgate-config/1", "global": {"cases": 0}})"),
            "cfg.json: global.cases: expected a positive integer, found 0");
  EXPECT_EQ(error_of(R"({"format": "kgate-config/1", "global": {"families": ["fuzzy"]}})"),
            "cfg.json: global.families: unknown family \"fuzzy\"; expected random, ragged, "
            "extreme, special, layout, long or huge");
}

// The speed gate's and the sweep's settings as the command line takes them: what the gates would
// refuse in a worker is refused here, before anything runs (issue 48).
TEST(Config, RefusesSettingsTheGatesCannotUse) {
  EXPECT_EQ(error_of(R"({"format": "kgate-config/1", "global": {"alpha": 0.5}})"),
            "cfg.json: global.alpha: expected a number in (0, 0.5), found 0.5");
  EXPECT_EQ(error_of(R"({"format": "kgate-config/1", "global": {"alpha": 0}})"),
            "cfg.json: global.alpha: expected a number in (0, 0.5), found 0");
  EXPECT_EQ(error_of(R"({"format": "kgate-config/1", "ops": {"softmax": {"delta": 0}}})"),
            "cfg.json: ops.softmax.delta: expected a number in (0, 10], found 0");
  EXPECT_EQ(error_of(R"({"format": "kgate-config/1", "global": {"delta": -0.5}})"),
            "cfg.json: global.delta: expected a number in (0, 10], found -0.5");
  EXPECT_EQ(error_of(R"({"format": "kgate-config/1", "global": {"time_budget_s": -1}})"),
            "cfg.json: global.time_budget_s: expected a number in [0, 86400], found -1");
  EXPECT_EQ(error_of(R"({"format": "kgate-config/1", "global": {"atol": -1e-5}})"),
            "cfg.json: global.atol: expected a number in [0, 1e+30], found -1e-05");
  EXPECT_EQ(error_of(R"({"format": "kgate-config/1", "kernels": {"k": {"fragile_margin": 0}}})"),
            "cfg.json: kernels.k.fragile_margin: expected a number in (0, 1], found 0");
  EXPECT_EQ(error_of(R"({"format": "kgate-config/1", "global": {"families": ["random", ""]}})"),
            "cfg.json: global.families: unknown family \"\"; expected random, ragged, extreme, "
            "special, layout, long or huge");
  // What the gates take is taken: 0 tolerances and budget, alpha just under 0.5, the huge family.
  EXPECT_EQ(
      error_of(R"({"format": "kgate-config/1", "global": {"atol": 0, "rtol": 0, "time_budget_s": 0,
                                                               "delta": 0.0025, "alpha": 0.49,
                                                               "fragile_margin": 1, "families": ["huge"]}})"),
      "no error");
}

// Op files named by a config are found next to it, as --ops would find them from there.
TEST(Config, OpFilesResolveAgainstTheConfigsDirectory) {
  const auto cfg = parse_config(nlohmann::json::parse(R"({"format": "kgate-config/1",
                                                         "op_files": ["ops", "/abs/my_op.json", "../shared/x.json"]})"),
                                "/repo/ci/kgate.json", correctness::rule_names());
  EXPECT_EQ(cfg.op_files,
            (std::vector<std::string>{"/repo/ci/ops", "/abs/my_op.json", "/repo/shared/x.json"}));
}

// Torch custom-op libraries resolve against the config's directory; specs are kept as written.
TEST(Config, TorchOpsAndTheirLibraries) {
  const auto cfg = parse_config(nlohmann::json::parse(R"({"format": "kgate-config/1",
                                                         "torch_libraries": ["build/libops.so"],
                                                         "torch_ops": ["mylib::rms=rms_norm,input=x"]})"),
                                "/repo/ci/kgate.json", correctness::rule_names());
  EXPECT_EQ(cfg.torch_libraries, (std::vector<std::string>{"/repo/ci/build/libops.so"}));
  EXPECT_EQ(cfg.torch_ops, (std::vector<std::string>{"mylib::rms=rms_norm,input=x"}));
  EXPECT_EQ(error_of(R"({"format": "kgate-config/1", "torch_ops": "mylib::rms=rms_norm"})"),
            "cfg.json: torch_ops: expected an array of specs (as --torch-op takes)");
  EXPECT_EQ(error_of(R"({"format": "kgate-config/1", "torch_libraries": [""]})"),
            "cfg.json: torch_libraries[0]: expected a string, found \"\"");
}

// gate_against_eager: a boolean at any level, the kernel's winning.
TEST(Config, GateAgainstEagerIsABooleanPerLevel) {
  const auto cfg = parse_config(nlohmann::json::parse(R"({"format": "kgate-config/1",
    "global": {"gate_against_eager": false}, "kernels": {"softmax_block": {"gate_against_eager": true}}})"),
                                "cfg.json", correctness::rule_names());
  EXPECT_EQ(cfg.resolve("softmax", "softmax_cpu", {}).gate_against_eager, false);
  EXPECT_EQ(cfg.resolve("softmax", "softmax_block", {}).gate_against_eager, true);
  EXPECT_FALSE(parse_config(nlohmann::json::parse(R"({"format": "kgate-config/1"})"), "c.json",
                            correctness::rule_names())
                   .resolve("softmax", "softmax_block", {})
                   .gate_against_eager.has_value());
  EXPECT_EQ(error_of(R"({"format": "kgate-config/1", "global": {"gate_against_eager": "no"}})"),
            "cfg.json: global.gate_against_eager: expected true or false, found \"no\"");
}

TEST(Config, MissingFileIsAUsageError) {
  try {
    load_config("/nonexistent/kgate.config.json", correctness::rule_names());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("cannot open the config file"), std::string::npos);
  }
}

}  // namespace
}  // namespace kgate
