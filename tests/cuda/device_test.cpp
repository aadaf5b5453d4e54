// Tests of choosing the GPU: --device N as a CUDA_VISIBLE_DEVICES entry, and the GPU CTest assigns
// a test (no GPU needed); the health probe of --devices (on a GPU, SKIPPED without one).
#include "runtime/cuda/device.hpp"

#include <gtest/gtest.h>

#include <cstdio>
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
            "--device 2: this process sees 2 device(s) (CUDA_VISIBLE_DEVICES=2,3); devices are "
            "numbered from 0 within "
            "that list");
  EXPECT_EQ(usage_error(0, ""),
            "--device 0: this process sees 0 device(s) (CUDA_VISIBLE_DEVICES=); devices are "
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

// On a GPU: the health probe `kgate check --devices` asks after a kernel finds this GPU in NVML by
// its UUID (not by an ordinal) and finds no trouble, before and after recording the ECC baseline;
// an unknown UUID is not found and is no trouble either.
TEST(Device, TheHealthProbeFindsAHealthyGpuByItsUuid) {
  if (device_count() <= 0) GTEST_SKIP() << "no CUDA device";
  const Nvml nvml;
  if (!nvml.available()) GTEST_SKIP() << nvml.unavailable_reason();
  const std::string uuid = device_info(0).uuid;
  unsigned long long ecc = ~0ull;
  bool found = false;
  EXPECT_EQ(nvml_device_trouble(uuid, &ecc, &found), "");
  EXPECT_TRUE(found) << uuid;
  EXPECT_EQ(nvml_device_trouble(uuid, &ecc, &found), "");
  EXPECT_TRUE(found);
  std::printf("NVML found %s; uncorrected ECC errors since the driver loaded: %s\n", uuid.c_str(),
              ecc == ~0ull ? "not reported" : std::to_string(ecc).c_str());
  EXPECT_EQ(nvml_device_trouble("GPU-00000000-0000-0000-0000-000000000000", &ecc, &found), "");
  EXPECT_FALSE(found);
}

}  // namespace
}  // namespace kgate::cuda
