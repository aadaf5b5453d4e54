// Op files compiled into the program (kgate_add_kernel OP_FILE): a kernel's op is known from the
// embedded bytes even where its op file is not on disk (an installed kgate, a build moved away
// from its sources).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "core/embedded_op_files.hpp"
#include "references/catalogue.hpp"
#include "runtime/kernel.hpp"

namespace kgate {
namespace {

constexpr const char* kPath = "/nonexistent/kgate-embedded-test/embedded_twin.op.json";
constexpr const char kText[] = R"({
  "format": "kgate-op/1",
  "name": "embedded_twin",
  "summary": "an op whose file exists only inside this program",
  "symbols": [{"name": "N", "min": 1, "max": 4096}],
  "inputs": [{"name": "x", "shape": ["N"], "values": {"kind": "case"}}],
  "outputs": [{"name": "y", "shape": ["N"]}],
  "dtypes": ["f32"],
  "reference": ["def reference(x: Tensor) -> Tensor:", "    return x * 2.0"]
})";

const bool kEmbedded =
    embed_op_file(kPath, reinterpret_cast<const unsigned char*>(kText), sizeof(kText) - 1);
KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "embedded_twin_cpu";
  k.op = "embedded_twin";
  k.op_file = kPath;
  k.backend = Backend::cpu;
  k.dtypes = {DType::f32};
  k.source = __FILE__;
  k.launch = [](const KernelCall&) {};
  return k;
})());

TEST(EmbeddedOpFile, KnownWithoutTheFileOnDisk) {
  ASSERT_TRUE(kEmbedded);
  ASSERT_FALSE(std::filesystem::exists(kPath));
  const OpSignature& op = find_op("embedded_twin");
  EXPECT_EQ(op.origin, kPath);
  ASSERT_EQ(op.inputs.size(), 1u);
  EXPECT_EQ(op.inputs[0].name, "x");
}

TEST(EmbeddedOpFile, OnlyEmbeddedPathsAreFound) {
  ASSERT_NE(embedded_op_file(kPath), nullptr);
  EXPECT_EQ(*embedded_op_file(kPath), std::string(kText));
  EXPECT_EQ(embedded_op_file("/nonexistent/other.op.json"), nullptr);
}

// The registry declares each kernel's op file to core/, where the catalogue reads it: a kernel of a
// captured module (a base build) declares none, and its embedded op file is kept apart.
TEST(EmbeddedOpFile, RegisteredKernelsDeclareTheirOpFiles) {
  const auto declared = kernel_op_files();
  EXPECT_NE(std::find(declared.begin(), declared.end(), kPath), declared.end());
  const char* base_path = "/nonexistent/kgate-embedded-test/base_twin.op.json";
  begin_module_capture();
  embed_op_file(base_path, reinterpret_cast<const unsigned char*>(kText), sizeof(kText) - 1);
  KernelInfo k;
  k.name = "embedded_twin_base";
  k.op = "embedded_twin";
  k.op_file = base_path;
  k.backend = Backend::cpu;
  register_kernel(k);
  EXPECT_EQ(end_module_capture().size(), 1u);
  const auto after = kernel_op_files();
  EXPECT_EQ(std::find(after.begin(), after.end(), base_path), after.end());
  EXPECT_EQ(embedded_op_file(base_path), nullptr);
  EXPECT_EQ(captured_op_files().count(base_path), 1u);
}

}  // namespace
}  // namespace kgate
