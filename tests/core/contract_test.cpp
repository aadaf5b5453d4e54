// A kernel's contract (core/contract.hpp): parsing with errors that name the field, and which
// cases fall outside it, with the reason in the contract's terms.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/config.hpp"
#include "core/contract.hpp"
#include "core/error.hpp"
#include "tests/support/usage_error.hpp"

namespace kgate {
namespace {

OpSignature rows_op() {
  OpSignature op;
  op.name = "rows";
  op.inputs = {{"x", {"B", "N"}}};
  op.outputs = {{"y", {"B", "N"}}};
  op.symbols = {{"B", 0, 64}, {"N", 0, 65536}};
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  return op;
}

Case rows_case(DType dtype, int64_t b, int64_t n, Layout layout = Layout::contiguous) {
  Case c;
  c.op = "rows";
  c.dtype = dtype;
  c.dims = {{"B", b}, {"N", n}};
  c.layout = layout;
  return c;
}

using testing::usage_error;

Contract contract(const char* text) {
  return parse_contract(nlohmann::json::parse(text), "kernels.k.contract");
}

TEST(Contract, ACaseInsideHasNoReason) {
  const Contract c = contract(
      R"({"dtypes": ["f16", "bf16"], "layouts": ["contiguous", "row_padded"], "alignment": 16,
          "require": ["N % 8 == 0", "N <= 8192"], "empty": false})");
  const OpSignature op = rows_op();
  EXPECT_EQ(outside_contract(c, op, rows_case(DType::f16, 4, 256)), "");
  EXPECT_EQ(outside_contract(c, op, rows_case(DType::bf16, 1, 8, Layout::padded)), "");
}

TEST(Contract, EachClauseGivesItsOwnReason) {
  const Contract c = contract(
      R"({"dtypes": ["f16", "bf16"], "layouts": ["contiguous", "offset"], "alignment": 16,
          "require": ["N % 8 == 0", "N <= 8192"], "empty": false})");
  const OpSignature op = rows_op();
  EXPECT_EQ(outside_contract(c, op, rows_case(DType::f32, 4, 256)),
            "dtype f32 is not among contract.dtypes [f16, bf16]");
  EXPECT_EQ(outside_contract(c, op, rows_case(DType::f16, 0, 256)),
            "B=0 is an empty tensor, and contract.empty is false");
  EXPECT_EQ(outside_contract(c, op, rows_case(DType::f16, 4, 256, Layout::strided)),
            "layout strided is not among contract.layouts [contiguous, offset]");
  EXPECT_EQ(outside_contract(c, op, rows_case(DType::f16, 4, 256, Layout::offset)),
            "its base pointers are 2-byte aligned, and contract.alignment is 16");
  EXPECT_EQ(outside_contract(c, op, rows_case(DType::f16, 4, 256, Layout::offset16)), "");
  EXPECT_EQ(outside_contract(c, op, rows_case(DType::f16, 4, 257)),
            "N=257 breaks contract.require \"N % 8 == 0\"");
  EXPECT_EQ(outside_contract(c, op, rows_case(DType::f16, 4, 16384)),
            "N=16384 breaks contract.require \"N <= 8192\"");
}

TEST(Contract, AnEmptyContractTakesEverything) {
  const Contract c = contract("{}");
  const OpSignature op = rows_op();
  for (Layout l :
       {Layout::contiguous, Layout::strided, Layout::offset, Layout::padded, Layout::offset16})
    EXPECT_EQ(outside_contract(c, op, rows_case(DType::f32, 0, 3, l)), "") << layout_name(l);
}

TEST(Contract, BadContractsNameTheField) {
  EXPECT_NE(usage_error([] {
              contract(R"({"layout": ["contiguous"]})");
            }).find("kernels.k.contract: unknown key 'layout'"),
            std::string::npos);
  EXPECT_NE(usage_error([] { contract(R"({"layouts": ["packed"]})"); })
                .find("kernels.k.contract.layouts[0]: unknown layout 'packed' (expected "
                      "contiguous, row_padded, offset or strided)"),
            std::string::npos);
  EXPECT_NE(usage_error([] { contract(R"({"alignment": 12})"); }).find("a power of two"),
            std::string::npos);
  EXPECT_NE(usage_error([] {
              contract(R"({"require": ["N %"]})");
            }).find("kernels.k.contract.require[0]"),
            std::string::npos);
  EXPECT_NE(
      usage_error([] { contract(R"({"dtypes": ["f12"]})"); }).find("kernels.k.contract.dtypes"),
      std::string::npos);
  const OpSignature op = rows_op();
  EXPECT_NE(usage_error([&] {
              check_contract(contract(R"({"require": ["H % 8 == 0"]})"), op, "c");
            }).find("c.require[0]"),
            std::string::npos);
  EXPECT_NE(usage_error([&] {
              check_contract(contract(R"({"dtypes": ["f64"]})"), op, "c");
            }).find("c.dtypes: f64 is no dtype of op rows (f32, f16, bf16)"),
            std::string::npos);
}

TEST(Contract, AConfigTakesAContractPerKernelAndTheOutsideMode) {
  const Config config = parse_config(nlohmann::json::parse(R"({
      "format": "kgate-config/1",
      "global": {"outside_contract": "warn"},
      "kernels": {"mylib.rms": {"contract": {"layouts": ["contiguous"]}}}})"),
                                     "k.json", {"allclose"});
  const GateSettings s = config.resolve("rms_norm", "mylib.rms", {});
  ASSERT_TRUE(s.contract.has_value());
  EXPECT_EQ(s.contract->layouts, std::vector<std::string>{"contiguous"});
  EXPECT_EQ(s.outside_contract, "warn");
  EXPECT_FALSE(config.resolve("rms_norm", "other", {}).contract.has_value());
  EXPECT_NE(usage_error([] {
              parse_config(nlohmann::json::parse(R"({"format": "kgate-config/1",
                  "global": {"outside_contract": "ignore"}})"),
                           "k.json", {"allclose"});
            }).find("k.json: global.outside_contract: expected \"fail\""),
            std::string::npos);
}

}  // namespace
}  // namespace kgate
