// runtime/dispatch.hpp: the floating-dtype switch every CUDA kernel's launcher uses, and the
// KernelInfo a CUDA kernel starts from (host code: runs without a GPU).
#include "runtime/dispatch.hpp"

#include <gtest/gtest.h>

#include <string>
#include <type_traits>

namespace kgate {
namespace {

template <typename T>
std::string which() {
  if (std::is_same_v<T, float>) return "float";
  if (std::is_same_v<T, __half>) return "__half";
  if (std::is_same_v<T, __nv_bfloat16>) return "__nv_bfloat16";
  return "other";
}

std::string dispatched(DType dtype) {
  std::string seen;
  dispatch_floating(dtype, "k", [&](auto t) { seen = which<element_t<decltype(t)>>(); });
  return seen;
}

TEST(Dispatch, EachFloatingDtypeGetsItsElementType) {
  EXPECT_EQ(dispatched(DType::f32), "float");
  EXPECT_EQ(dispatched(DType::f16), "__half");
  EXPECT_EQ(dispatched(DType::bf16), "__nv_bfloat16");
}

TEST(Dispatch, AnotherDtypeIsAUsageErrorNamingTheKernelAndTheDtype) {
  bool called = false;
  try {
    dispatch_floating(DType::i32, "my_kernel", [&](auto) { called = true; });
    FAIL() << "i32 was dispatched";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(
        std::string(e.what()).find("my_kernel: dtype i32 is not one it takes (f32, f16, bf16)"),
        std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(called);
}

TEST(Dispatch, CudaKernelFillsWhatEveryCudaKernelSets) {
  int launches = 0;
  const KernelInfo k =
      cuda_kernel("k1", "softmax", "kernels/k1.cu", [&](const KernelCall&) { ++launches; });
  EXPECT_EQ(k.name, "k1");
  EXPECT_EQ(k.op, "softmax");
  EXPECT_EQ(k.backend, Backend::cuda);
  EXPECT_EQ(k.dtypes, (std::vector<DType>{DType::f32, DType::f16, DType::bf16}));
  EXPECT_EQ(k.source, "kernels/k1.cu");
  ASSERT_TRUE(k.launch);
  k.launch(KernelCall{});
  EXPECT_EQ(launches, 1);
  EXPECT_TRUE(k.timed);
  EXPECT_FALSE(k.mutant);
}

}  // namespace
}  // namespace kgate
