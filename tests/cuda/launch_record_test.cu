// LaunchRecorder on the GPU (SKIPPED without one): what a launch records through each way of
// launching (<<<>>>, cudaLaunchKernel, cuLaunchKernel), and which differences make two records
// differ: grid, block, a scalar argument, where a pointer points into its buffer (not which
// buffer).
#include "runtime/cuda/launch_record.hpp"

#include <cuda.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "runtime/cuda/device.hpp"

namespace kgate::cuda {
namespace {

__global__ void scale_rows(float* out, const float* in, int n, float factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * factor;
}

constexpr int kN = 1024;

class LaunchRecorderGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (device_count() <= 0) GTEST_SKIP() << "no CUDA device";
    std::string why;
    if (!watch_modules(&why)) GTEST_SKIP() << why;
    ASSERT_EQ(cudaMalloc(&in_, kN * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out_, kN * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&other_, kN * sizeof(float)), cudaSuccess);
  }
  void TearDown() override {
    cudaFree(in_);
    cudaFree(out_);
    cudaFree(other_);
  }
  // Records the second of two calls (the first loads the code).
  static LaunchRecord record(const std::function<void()>& launch) {
    launch();
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    LaunchRecorder recorder;
    launch();
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    return recorder.stop();
  }
  static std::string only_line(const LaunchRecord& r) {
    EXPECT_TRUE(r.known) << r.why;
    EXPECT_EQ(r.launches.size(), 1u);
    return r.launches.empty() ? std::string() : r.launches.front();
  }
  float* in_ = nullptr;
  float* out_ = nullptr;
  float* other_ = nullptr;
};

TEST_F(LaunchRecorderGpu, AChevronLaunchRecordsItsFunctionCodeAndConfiguration) {
  const std::string line = only_line(record([&] { scale_rows<<<4, 256>>>(out_, in_, kN, 2.f); }));
  EXPECT_NE(line.find("scale_rows"), std::string::npos) << line;
  EXPECT_NE(line.find(" grid=4,1,1 block=256,1,1 smem=0"), std::string::npos) << line;
  EXPECT_EQ(line.find("code=?"), std::string::npos) << "its CUBIN was not seen loaded: " << line;
  EXPECT_EQ(line.find("code=ambiguous"), std::string::npos) << line;
}

TEST_F(LaunchRecorderGpu, TheSameLaunchOnOtherBuffersRecordsTheSame) {
  const auto a = record([&] { scale_rows<<<4, 256>>>(out_, in_, kN, 2.f); });
  const auto b = record([&] { scale_rows<<<4, 256>>>(other_, in_, kN, 2.f); });
  std::string difference;
  EXPECT_TRUE(same_launches(a, b, &difference)) << difference;
}

TEST_F(LaunchRecorderGpu, GridBlockArgumentsAndOffsetsMakeADifference) {
  const auto base = record([&] { scale_rows<<<4, 256>>>(out_, in_, kN, 2.f); });
  std::string difference;
  EXPECT_FALSE(same_launches(base, record([&] { scale_rows<<<8, 128>>>(out_, in_, kN, 2.f); }),
                             &difference));
  EXPECT_NE(difference.find("block=128,1,1"), std::string::npos) << difference;
  EXPECT_FALSE(same_launches(base, record([&] { scale_rows<<<4, 256>>>(out_, in_, kN, 3.f); }),
                             &difference));
  EXPECT_FALSE(same_launches(
      base, record([&] { scale_rows<<<4, 256>>>(out_ + 1, in_, kN - 1, 2.f); }), &difference));
  EXPECT_FALSE(same_launches(base, record([&] { scale_rows<<<4, 256, 64>>>(out_, in_, kN, 2.f); }),
                             &difference));
}

TEST_F(LaunchRecorderGpu, TheRuntimeAndTheDriverApiRecordTheSameConfiguration) {
  int n = kN;
  float factor = 2.f;
  void* args[] = {&out_, &in_, &n, &factor};
  const std::string runtime = only_line(record([&] {
    ASSERT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&scale_rows), dim3(4), dim3(256), args,
                               0, nullptr),
              cudaSuccess);
  }));
  EXPECT_NE(runtime.find(" grid=4,1,1 block=256,1,1 smem=0"), std::string::npos) << runtime;
  cudaFunction_t f = nullptr;
  ASSERT_EQ(cudaGetFuncBySymbol(&f, reinterpret_cast<const void*>(&scale_rows)), cudaSuccess);
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult status{};
  ASSERT_EQ(cudaGetDriverEntryPointByVersion("cuLaunchKernel", &entry, CUDA_VERSION,
                                             cudaEnableDefault, &status),
            cudaSuccess);
  const auto launch = reinterpret_cast<decltype(&::cuLaunchKernel)>(entry);
  const std::string driver = only_line(record([&] {
    ASSERT_EQ(
        launch(reinterpret_cast<CUfunction>(f), 4, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr),
        CUDA_SUCCESS);
  }));
  EXPECT_EQ(driver, runtime);
}

}  // namespace
}  // namespace kgate::cuda
