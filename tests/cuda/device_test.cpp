// Tests of choosing the GPU (no GPU needed): --device N as a CUDA_VISIBLE_DEVICES entry, and the GPU
// CTest assigns a test.
#include "runtime/cuda/device.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/error.hpp"

namespace kgate::cuda {
namespace {

std::string usage_error(int ordinal, const char* visible) {
  try {
    visible_devices_for(ordinal, visible);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    return e.what();
  }
  return "no error";
}

TEST(Device, OrdinalsCountWithinCudaVisibleDevices) {
  EXPECT_EQ(visible_devices_for(0, nullptr), "0");
  EXPECT_EQ(visible_devices_for(3, nullptr), "3");
  EXPECT_EQ(visible_devices_for(0, "2,3"), "2");
  EXPECT_EQ(visible_devices_for(1, "2, 3"), "3");
  EXPECT_EQ(visible_devices_for(1, "GPU-aaaa,GPU-bbbb"), "GPU-bbbb");
  EXPECT_EQ(visible_devices_for(0, "MIG-1234"), "MIG-1234");
  EXPECT_EQ(usage_error(2, "2,3"),
            "--device 2: this process sees 2 device(s) (CUDA_VISIBLE_DEVICES=2,3); devices are numbered from 0 within "
            "that list");
  EXPECT_EQ(usage_error(0, ""), "--device 0: this process sees 0 device(s) (CUDA_VISIBLE_DEVICES=); devices are "
                                "numbered from 0 within that list");
  EXPECT_EQ(usage_error(-1, nullptr), "--device -1: expected a device ordinal >= 0");
}

TEST(Device, SelectingNarrowsTheVisibleDevicesAndIsRecorded) {
  ::setenv("CUDA_VISIBLE_DEVICES", "4,5,6", 1);
  select_device(2);
  EXPECT_STREQ(std::getenv("CUDA_VISIBLE_DEVICES"), "6");
  EXPECT_STREQ(std::getenv("KGATE_DEVICE"), "device 2 (of CUDA_VISIBLE_DEVICES=4,5,6)");
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  select_device(1);
  EXPECT_STREQ(std::getenv("CUDA_VISIBLE_DEVICES"), "1");
  EXPECT_STREQ(std::getenv("KGATE_DEVICE"), "device 1");
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  ::unsetenv("KGATE_DEVICE");
}

TEST(Device, TheGpuCTestAssigned) {
  ::unsetenv("CTEST_RESOURCE_GROUP_COUNT");
  ::unsetenv("CTEST_RESOURCE_GROUP_0_GPUS");
  EXPECT_FALSE(ctest_assigned_gpu().has_value());
  ::setenv("CTEST_RESOURCE_GROUP_COUNT", "1", 1);
  ::setenv("CTEST_RESOURCE_GROUP_0_GPUS", "id:1,slots:1", 1);
  EXPECT_EQ(ctest_assigned_gpu(), 1);
  ::setenv("CTEST_RESOURCE_GROUP_0_GPUS", "id:0,slots:1", 1);
  EXPECT_EQ(ctest_assigned_gpu(), 0);
  ::setenv("CTEST_RESOURCE_GROUP_0_GPUS", "slots:1", 1);
  EXPECT_FALSE(ctest_assigned_gpu().has_value());
  ::unsetenv("CTEST_RESOURCE_GROUP_COUNT");
  ::unsetenv("CTEST_RESOURCE_GROUP_0_GPUS");
}

}  // namespace
}  // namespace kgate::cuda
