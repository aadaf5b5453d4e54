// The kernel registry's completion of kernels (KernelInfo::complete), through a module capture so
// that the process's own registry is left as it was.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "runtime/kernel.hpp"

namespace kgate {
namespace {

KernelInfo incomplete(const std::string& name, int* calls) {
  KernelInfo k;
  k.name = name;
  k.op = "softmax";
  k.source = "kernels/" + name + "/package";
  k.complete = [calls](KernelInfo& info) {
    ++*calls;
    info.dtypes = {DType::f32};
    info.tile_sizes = {256};
  };
  return k;
}

TEST(KernelRegistry, KernelsAreCompletedOnceBeforeTheyAreListed) {
  int calls = 0;
  begin_module_capture();
  register_kernel(incomplete("rows_a", &calls));
  register_kernel(incomplete("rows_b", &calls));
  EXPECT_EQ(calls, 0);  // registration completes nothing
  const auto kernels = end_module_capture();
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(calls, 2);
  for (const auto& k : kernels) {
    EXPECT_EQ(k.dtypes, (std::vector<DType>{DType::f32})) << k.name;
    EXPECT_EQ(k.tile_sizes, (std::vector<int64_t>{256})) << k.name;
    EXPECT_FALSE(k.complete) << k.name << ": completed twice would run twice";
  }
}

TEST(KernelRegistry, AFailedCompletionNamesTheKernel) {
  KernelInfo k;
  k.name = "rows_broken";
  k.source = "kernels/rows/package";
  k.complete = [](KernelInfo&) {
    throw Error(ErrorKind::package, "its manifest, as built:\nkgate.json: op: unknown");
  };
  begin_module_capture();
  register_kernel(k);
  try {
    end_module_capture();
    FAIL() << "a failed completion was not reported";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::package);
    EXPECT_EQ(std::string(e.what()),
              "kernel 'rows_broken' (kernels/rows/package): its manifest, as built:\nkgate.json: "
              "op: unknown");
  }
  // The process's own kernels are untouched (and complete).
  for (const auto& r : registered_kernels()) EXPECT_NE(r.name, "rows_broken");
}

}  // namespace
}  // namespace kgate
