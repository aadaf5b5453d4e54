// safetensors files and captured-inputs cases: a written file reads back tensor for tensor, a
// malformed one is refused naming the file and what is wrong, and a captured case takes its
// symbols and dtype from the tensors, replays from its id, and refuses a file that does not fit.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "core/captured.hpp"
#include "core/case.hpp"
#include "core/error.hpp"
#include "core/safetensors.hpp"

namespace kgate {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir() {
  const fs::path d =
      fs::temp_directory_path() / ("kgate_safetensors_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

std::vector<char> floats(std::initializer_list<float> v) {
  std::vector<char> b(v.size() * sizeof(float));
  std::memcpy(b.data(), std::data(v), b.size());
  return b;
}

std::vector<char> zeros(size_t n) { return std::vector<char>(n, 0); }

// Raw bytes as a file: an 8-byte little-endian header length, the header, then `data`.
std::string raw_file(const std::string& name, const std::string& header,
                     const std::string& data = "", int64_t header_len = -1) {
  const auto p = (temp_dir() / name).string();
  std::ofstream out(p, std::ios::binary);
  const uint64_t n = header_len < 0 ? header.size() : static_cast<uint64_t>(header_len);
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << header << data;
  return p;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Safetensors, WrittenFileReadsBackTensorForTensor) {
  const auto path = (temp_dir() / "two.safetensors").string();
  write_safetensors(
      path, {{"x", "F32", {2, 3}, floats({1, 2, 3, 4, 5, 6})}, {"idx", "I64", {4}, zeros(32)}},
      {{"op", "softmax"}});
  const auto f = read_safetensors_header(path);
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(f.metadata.at("op"), "softmax");
  const auto* x = f.find("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->dtype, "F32");
  EXPECT_EQ(x->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(x->numel(), 6);
  EXPECT_EQ(f.data_start % 8, 0u);  // the data is 8-byte aligned
  const auto bytes = read_safetensors_data(f, *x);
  EXPECT_EQ(bytes, floats({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(f.find("idx")->shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(f.find("y"), nullptr);
}

TEST(Safetensors, MalformedFilesAreRefusedNamingWhatIsWrong) {
  const auto short_file = (temp_dir() / "short.safetensors").string();
  std::ofstream(short_file) << "abc";
  EXPECT_NE(error_of([&] {
              read_safetensors_header(short_file);
            }).find("shorter than its 8-byte header length"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { read_safetensors_header((temp_dir() / "none").string()); }).find("not found"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              read_safetensors_header(raw_file("huge_header", "{}", "", int64_t{1} << 40));
            }).find("at most 100 MB"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              read_safetensors_header(raw_file("trunc", "{}", "", 100));
            }).find("truncated"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { read_safetensors_header(raw_file("notjson", "{x")); }).find("not valid JSON"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              read_safetensors_header(
                  raw_file("dtype", R"({"x":{"dtype":"F7","shape":[1],"data_offsets":[0,4]}})",
                           std::string(4, '\0')));
            }).find("dtype \"F7\" is not one kgate reads"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              read_safetensors_header(
                  raw_file("bytes", R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})",
                           std::string(4, '\0')));
            }).find("4 bytes do not hold shape [2] of F32 (8 bytes)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              read_safetensors_header(
                  raw_file("outside", R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                           std::string(4, '\0')));
            }).find("reach outside the 4 bytes of data"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] {
        read_safetensors_header(raw_file(
            "overlap",
            R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
            std::string(8, '\0')));
      }).find("share bytes"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              read_safetensors_header(raw_file(
                  "dup", R"({"x":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"x":{}})"));
            }).find("names \"x\" twice"),
            std::string::npos);
  // A shape with more elements than the file has bytes is refused before it can overflow.
  EXPECT_NE(error_of([&] {
              read_safetensors_header(raw_file(
                  "overflow",
                  R"({"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})",
                  std::string(4, '\0')));
            }).find("more elements than the file has bytes"),
            std::string::npos);
}

// An op as the built-in row ops declare it, plus an index input and a symbol only the output shows.
OpSignature gather_op() {
  OpSignature op;
  op.name = "row_gather";
  op.inputs = {{"x", {"B", "N"}}, {"idx", {"B", "2*K"}, "i64"}};
  op.outputs = {{"y", {"B", "K"}}};
  op.symbols = {{"B", 1, 4096}, {"N", 1, 4096}, {"K", 1, 64}, {"V", 1, 64}};
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  op.relations = {"K <= N"};
  return op;
}

TEST(Captured, ACaseTakesItsSymbolsAndDtypeFromTheTensorsAndReplaysFromItsId) {
  const auto path = (temp_dir() / "call.safetensors").string();
  write_safetensors(path, {{"x", "BF16", {3, 5}, zeros(30)}, {"idx", "I64", {3, 4}, zeros(96)}},
                    {{"V", "7"}, {"K", "2"}});
  const Case c = captured_case(gather_op(), "captures/call.safetensors", path, 0x11);
  EXPECT_EQ(c.dtype, DType::bf16);
  EXPECT_EQ(c.dims,
            (std::vector<std::pair<std::string, int64_t>>{{"B", 3}, {"N", 5}, {"K", 2}, {"V", 7}}));
  EXPECT_EQ(c.values, Values::captured);
  EXPECT_EQ(c.family, "captured");
  EXPECT_EQ(c.captured_path, path);
  EXPECT_EQ(c.id(),
            "row_gather:bf16:B=3,N=5,K=2,V=7:contiguous:captured=captures/"
            "call.safetensors:0000000000000011");
  const Case back = Case::from_id(c.id());
  EXPECT_EQ(back, c);
  EXPECT_EQ(back.captured, "captures/call.safetensors");
  nlohmann::json j = c;
  EXPECT_EQ(j.at("captured"), "captures/call.safetensors");
  EXPECT_EQ(j.get<Case>(), c);
  EXPECT_NE(error_of([] {
              Case::from_id("softmax:f32:B=1:contiguous:captured=:01");
            }).find("names no file"),
            std::string::npos);
}

TEST(Captured, AFileThatDoesNotFitTheOpIsRefusedNamingTheTensorOrSymbol) {
  const auto op = gather_op();
  const auto file = [](const std::string& name, const std::vector<SafetensorsInput>& t,
                       const std::map<std::string, std::string>& meta) {
    const auto p = (temp_dir() / name).string();
    write_safetensors(p, t, meta);
    return p;
  };
  const std::map<std::string, std::string> v{{"V", "7"}, {"K", "2"}};
  const auto missing = file("missing.st", {{"x", "F32", {3, 5}, zeros(60)}}, v);
  EXPECT_NE(error_of([&] {
              captured_case(op, "missing.st", missing, 0);
            }).find("holds no tensor \"idx\"; op row_gather takes x, idx"),
            std::string::npos);
  const auto f64 =
      file("f64.st", {{"x", "F64", {3, 5}, zeros(120)}, {"idx", "I64", {3, 4}, zeros(96)}}, v);
  EXPECT_NE(error_of([&] {
              captured_case(op, "f64.st", f64, 0);
            }).find("tensor \"x\" is \"F64\"; op row_gather takes F32, F16, BF16"),
            std::string::npos);
  const auto i32 =
      file("i32.st", {{"x", "F32", {3, 5}, zeros(60)}, {"idx", "I32", {3, 4}, zeros(48)}}, v);
  EXPECT_NE(error_of([&] {
              captured_case(op, "i32.st", i32, 0);
            }).find("tensor \"idx\" is \"I32\", expected I64"),
            std::string::npos);
  const auto rank =
      file("rank.st", {{"x", "F32", {15}, zeros(60)}, {"idx", "I64", {3, 4}, zeros(96)}}, v);
  EXPECT_NE(
      error_of([&] { captured_case(op, "rank.st", rank, 0); }).find("gives it rank 2: [B, N]"),
      std::string::npos);
  const auto rows =
      file("rows.st", {{"x", "F32", {3, 5}, zeros(60)}, {"idx", "I64", {2, 4}, zeros(64)}}, v);
  EXPECT_NE(error_of([&] {
              captured_case(op, "rows.st", rows, 0);
            }).find("symbol B is 3 in one tensor and 2 in tensor \"idx\""),
            std::string::npos);
  const auto odd = file(
      "odd.st", {{"x", "F32", {3, 5}, zeros(60)}, {"idx", "I64", {3, 3}, zeros(72)}}, {{"V", "7"}});
  EXPECT_NE(error_of([&] { captured_case(op, "odd.st", odd, 0); }).find("is in no input's shape"),
            std::string::npos);  // K is only in 2*K: it must come from __metadata__
  const auto odd_k =
      file("odd_k.st", {{"x", "F32", {3, 5}, zeros(60)}, {"idx", "I64", {3, 3}, zeros(72)}}, v);
  EXPECT_NE(
      error_of([&] { captured_case(op, "odd_k.st", odd_k, 0); }).find("expects dim 1 (2*K) = 4"),
      std::string::npos);
  const auto no_v =
      file("no_v.st", {{"x", "F32", {3, 5}, zeros(60)}, {"idx", "I64", {3, 4}, zeros(96)}},
           {{"K", "2"}});
  EXPECT_NE(error_of([&] { captured_case(op, "no_v.st", no_v, 0); })
                .find("symbol V of op row_gather is in no input's shape: give it in the file's "
                      "__metadata__"),
            std::string::npos);
  const auto relation =
      file("relation.st", {{"x", "F32", {3, 1}, zeros(12)}, {"idx", "I64", {3, 4}, zeros(96)}}, v);
  EXPECT_NE(
      error_of([&] { captured_case(op, "relation.st", relation, 0); }).find("relation K <= N"),
      std::string::npos);
  const auto extra = file("extra.st",
                          {{"x", "F32", {3, 5}, zeros(60)},
                           {"idx", "I64", {3, 4}, zeros(96)},
                           {"y", "F32", {3, 2}, zeros(24)}},
                          v);
  EXPECT_NE(error_of([&] {
              captured_case(op, "extra.st", extra, 0);
            }).find("tensor \"y\" is not an input"),
            std::string::npos);
  const auto good =
      file("good.st", {{"x", "F32", {3, 5}, zeros(60)}, {"idx", "I64", {3, 4}, zeros(96)}}, v);
  EXPECT_NE(error_of([&] { captured_case(op, "a:b.st", good, 0); }).find("hold no ':'"),
            std::string::npos);
  EXPECT_EQ(captured_case(op, "good.st", good, 0).dtype, DType::f32);
}

}  // namespace
}  // namespace kgate
