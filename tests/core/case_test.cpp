// Case ids and JSON: every case must survive id() -> from_id() and JSON round trips exactly.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/case.hpp"
#include "core/error.hpp"

namespace kgate {
namespace {

Case sample() {
  Case c;
  c.op = "softmax";
  c.dtype = DType::bf16;
  c.dims = {{"B", 4}, {"N", 257}};
  c.layout = Layout::offset;
  c.values = Values::clustered_max;
  c.seed = 0xdeadbeef12345678ull;
  c.family = "ragged";
  return c;
}

TEST(Case, IdIsReadable) {
  EXPECT_EQ(sample().id(), "softmax:bf16:B=4,N=257:offset:clustered_max:deadbeef12345678");
}

TEST(Case, IdRoundTrips) {
  const Case c = sample();
  EXPECT_EQ(Case::from_id(c.id()), c);
  for (Layout l :
       {Layout::contiguous, Layout::strided, Layout::offset, Layout::padded, Layout::offset16}) {
    Case d = sample();
    d.layout = l;
    EXPECT_EQ(Case::from_id(d.id()), d) << d.id();
    EXPECT_NE(d.id().find(std::string(":") + layout_name(l) + ":"), std::string::npos) << d.id();
  }
}

TEST(Case, JsonRoundTrips) {
  const Case c = sample();
  const nlohmann::json j = c;
  const Case back = j.get<Case>();
  EXPECT_EQ(back, c);
  EXPECT_EQ(back.family, "ragged");
  EXPECT_EQ(j.at("dims").at("N"), 257);
}

TEST(Case, JsonWithOnlyAnIdIsAccepted) {
  const nlohmann::json j = {{"id", sample().id()}};
  EXPECT_EQ(j.get<Case>(), sample());
}

TEST(Case, MalformedIdsNameTheProblem) {
  auto message = [](const std::string& id) {
    try {
      Case::from_id(id);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("softmax:f32").find("expected op:dtype:SYM=N"), std::string::npos);
  EXPECT_NE(message("softmax:f99:B=1:contiguous:normal:0").find("unknown dtype 'f99'"),
            std::string::npos);
  EXPECT_NE(message("softmax:f32:B1:contiguous:normal:0").find("'B1' is not SYM=N"),
            std::string::npos);
  EXPECT_NE(message("softmax:f32:B=x:contiguous:normal:0").find("needs a non-negative integer"),
            std::string::npos);
  EXPECT_NE(message("softmax:f32:B=1:diagonal:normal:0").find("unknown layout 'diagonal'"),
            std::string::npos);
  EXPECT_NE(message("softmax:f32:B=1:contiguous:weird:0").find("unknown value family 'weird'"),
            std::string::npos);
  EXPECT_NE(message("softmax:f32:B=1:contiguous:normal:xyz").find("not hexadecimal"),
            std::string::npos);
}

TEST(Case, DimLookup) {
  Case c = sample();
  EXPECT_EQ(c.dim("N"), 257);
  c.set_dim("N", 33);
  EXPECT_EQ(c.dim("N"), 33);
  EXPECT_EQ(c.numel_hint(), 4 * 33);
  EXPECT_THROW(c.dim("Q"), Error);
}

TEST(DType, NamesRoundTrip) {
  for (DType d : {DType::f16, DType::bf16, DType::f32, DType::f64, DType::i32, DType::i64})
    EXPECT_EQ(parse_dtype(dtype_name(d)), d);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_THROW(parse_dtype("f8"), Error);
}

}  // namespace
}  // namespace kgate
