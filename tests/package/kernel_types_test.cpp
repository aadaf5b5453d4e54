// Tests of kernel parameter types read from mangled names: the reader on names NVRTC produced, and
// `kgate validate` refusing arguments of the right size and the wrong type (no GPU needed).
#include "runtime/package/kernel_types.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "package_test_util.hpp"
#include "runtime/package/validate.hpp"

namespace kgate::package {
namespace {

using nlohmann::json;
using testing::TempDir;

std::string kinds(const std::vector<ParamType>& types) {
  std::string out;
  for (const auto& t : types) {
    out += out.empty() ? "" : ", ";
    if (t.kind == ParamType::Kind::pointer)
      out += std::string("ptr ") + (t.pointee ? dtype_name(*t.pointee) : "?");
    else if (t.kind == ParamType::Kind::scalar)
      out += t.scalar ? scalar_type_name(*t.scalar) : "other";
    else out += "unknown";
  }
  return out;
}

TEST(KernelTypes, ReadFromMangledNames) {
  // A function template: the return type comes first, T_ and S0_ refer back.
  auto t = mangled_param_types("_Z5scaleIfEvPKT_PS0_x");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(kinds(*t), "ptr f32, ptr f32, i64");
  EXPECT_EQ((*t)[0].text, "float const*");
  // A plain kernel typed by a macro, and kgate's half types.
  t = mangled_param_types("_Z5twiceP6__halfPKS_i");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(kinds(*t), "ptr f16, ptr f16, i32");
  t = mangled_param_types("_ZN9gelu_rows13gelu_rows_vecI13__nv_bfloat16EEvPKT_PS2_xxxx");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(kinds(*t), "ptr bf16, ptr bf16, i64, i64, i64, i64");
  // Unsigned, double, by-value structs, other pointers.
  t = mangled_param_types("_Z1kjmydsP5uint4Pv");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(kinds(*t), "u32, u64, u64, f64, other, ptr ?, ptr ?");
  // extern "C" names carry no types; garbage does not demangle.
  EXPECT_FALSE(mangled_param_types("softmax_rows").has_value());
  EXPECT_FALSE(mangled_param_types("_Z!!").has_value());
  EXPECT_TRUE(mangled_param_types("_Z4nonev")->empty());
}

class KernelTypesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pkg.write("k.cu", R"J(
#include <cuda_fp16.h>
template <class T>
__global__ void k(const T* x, T* y, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}
)J");
  }

  /// The problems `kgate validate` reports for the manifest.
  std::vector<std::string> problems(const json& m) {
    pkg.write_json("kgate.json", m);
    ValidateOptions o;
    o.check = testing::catalogue_options();
    o.compile_options.cache_dir = cache.path();
    std::vector<std::string> out;
    for (const auto& p : validate_package(pkg.path(), o).problems)
      out.push_back(p.field + ": " + p.message);
    return out;
  }

  json manifest() const {
    return json::parse(R"J({
      "format": "kgate-package/1", "name": "types", "version": "1.0.0", "op": "softmax",
      "attributes": {"dim": -1}, "sources": ["k.cu"],
      "symbols": {"B": ["x", 0], "N": ["x", 1]},
      "launches": [{"kernel": {"f32": "k<float>", "f16": "k<__half>"}, "grid": ["ceil_div(B * N, 256)"], "block": [256],
                    "args": [{"tensor": "x"}, {"tensor": "y"}, {"shape": "B * N", "type": "u32"}]}],
      "guard": {"dtypes": ["f32", "f16"], "ranks": [2], "shapes": {"B": {"min": 1, "max": 4096}, "N": {"min": 1, "max": 4096}}}
    })J");
  }

  TempDir pkg, cache;
};

TEST_F(KernelTypesTest, MatchingTypesAreValid) {
  EXPECT_TRUE(problems(manifest()).empty()) << ::testing::PrintToString(problems(manifest()));
}

TEST_F(KernelTypesTest, AValueOfTheRightSizeAndTheWrongTypeIsRefused) {
  json m = manifest();
  m["launches"][0]["args"][2]["type"] = "i32";
  EXPECT_EQ(
      problems(m),
      (std::vector<std::string>{
          "launches[0].args[2]: is i32, but the kernel takes unsigned int (u32); set \"type\": "
          "\"u32\" (parameter 2 of kernel \"k<float>\" for f32)"}));
}

TEST_F(KernelTypesTest, ATensorOfAnotherElementTypeIsRefused) {
  json m = manifest();
  m["launches"][0]["kernel"]["f16"] =
      "k<float>";  // the f16 call would hand __half data to a float*
  EXPECT_EQ(
      problems(m),
      (std::vector<std::string>{
          "launches[0].args[0]: is tensor x of f16 elements, but the kernel takes float const* "
          "(parameter 0 of kernel \"k<float>\" for f16)"}));
}

TEST_F(KernelTypesTest, AnExternCKernelIsTypedByTheCompiler) {
  // extern "C" names carry no types: a probe compile reads them (kgate_param_probe<decltype(&k)>).
  pkg.write("k.cu", R"J(
extern "C" __global__ void k(const float* x, float* y, unsigned n) {}
)J");
  json m = manifest();
  m["launches"][0]["kernel"] = "k";
  // A float kernel declared for f16 tensors: its sizes match, its types do not.
  EXPECT_EQ(
      problems(m),
      (std::vector<std::string>{
          "launches[0].args[0]: is tensor x of f16 elements, but the kernel takes float const* "
          "(parameter 0 of kernel \"k\" for f16)"}));
  m["guard"]["dtypes"] = {"f32"};
  EXPECT_TRUE(problems(m).empty()) << ::testing::PrintToString(problems(m));
  m["launches"][0]["args"][2]["type"] = "i32";
  EXPECT_EQ(
      problems(m),
      (std::vector<std::string>{
          "launches[0].args[2]: is i32, but the kernel takes unsigned int (u32); set \"type\": "
          "\"u32\" (parameter 2 of kernel \"k\" for f32)"}));
  // The probe's name, read back.
  const auto t = probe_param_types("_Z17kgate_param_probeIPFvPKfPfjEEvv");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(kinds(*t), "ptr f32, ptr f32, u32");
  EXPECT_FALSE(probe_param_types("_Z5scaleIfEvPKT_PS0_x").has_value());  // not a probe
}

TEST_F(KernelTypesTest, APointerWhereTheKernelTakesAValueIsRefused) {
  pkg.write("k.cu", R"J(
template <class T>
__global__ void k(const T* x, long long n, T* y) {}
)J");
  json m = manifest();
  m["launches"][0]["kernel"] = {{"f32", "k<float>"}, {"f16", "k<float>"}};
  m["guard"]["dtypes"] = {"f32"};
  m["launches"][0]["kernel"] = "k<float>";
  m["launches"][0]["args"] = {
      {{"tensor", "x"}}, {{"tensor", "y"}}, {{"shape", "N"}, {"type", "i64"}}};
  EXPECT_EQ(problems(m),
            (std::vector<std::string>{
                "launches[0].args[1]: is a pointer (tensor y), but the kernel takes long long "
                "(parameter 1 of kernel \"k<float>\" for f32)"}));
}

}  // namespace
}  // namespace kgate::package
