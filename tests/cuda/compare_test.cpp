// Checked timing's jobs kernel on a GPU (SKIPPED without one): a difference anywhere, in the
// 16-byte words or in the bytes after them, aligned or not, raises the flag; equal bytes do not;
// copies, alone or on the way of a comparison, copy every byte; jobs of one launch keep apart. And
// CUPTI's timer gets every launch's kernels from a plain flush.
#include "runtime/cuda/compare.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/cuda/device.hpp"
#include "runtime/cuda/timer.hpp"

namespace kgate::cuda {
namespace {

// A bytes_differ job of `count` bytes at a and b on `flag` (copying a to copy_to on the way, if
// set).
CheckJob differ(const void* a, const void* b, int64_t count, int* flag, void* copy_to = nullptr) {
  CheckJob j;
  j.kind = CheckJob::Kind::bytes_differ;
  j.a = a;
  j.b = b;
  j.copy_to = copy_to;
  j.count = count;
  j.flag = flag;
  return j;
}

class Flags : public ::testing::Test {
 protected:
  void SetUp() override {
    if (device_count() <= 0) GTEST_SKIP() << "no CUDA device";
    ASSERT_EQ(cudaMalloc(&a_, kBytes + 32), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&b_, kBytes + 32), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&flag_), sizeof(int)), cudaSuccess);
  }
  void TearDown() override {
    cudaFree(a_);
    cudaFree(b_);
    cudaFree(flag_);
  }
  // The flag after comparing `bytes` bytes at a + offset_a and b + offset_b, both holding the same
  // pattern except byte `differ_at` of b's range (none when < 0).
  int bytes_differ(int offset_a, int offset_b, int64_t bytes, int64_t differ_at) {
    std::vector<unsigned char> host(static_cast<size_t>(bytes));
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<unsigned char>(i * 7 + 3);
    auto* a = static_cast<unsigned char*>(a_) + offset_a;
    auto* b = static_cast<unsigned char*>(b_) + offset_b;
    EXPECT_EQ(cudaMemcpy(a, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
    if (differ_at >= 0) host[static_cast<size_t>(differ_at)] ^= 0x10;
    EXPECT_EQ(cudaMemcpy(b, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
    return run([&] { return launch_check_jobs({differ(a, b, bytes, flag_)}, nullptr); });
  }
  template <typename Launch>
  int run(const Launch& launch) {
    EXPECT_EQ(cudaMemset(flag_, 0, sizeof(int)), cudaSuccess);
    EXPECT_EQ(launch(), cudaSuccess);
    int flag = -1;
    EXPECT_EQ(cudaMemcpy(&flag, flag_, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
    return flag;
  }
  static constexpr int64_t kBytes = 16 * 40000 + 7;
  void* a_ = nullptr;
  void* b_ = nullptr;
  int* flag_ = nullptr;
};

TEST_F(Flags, BytesDifferFindsOneChangedByteAnywhere) {
  for (const auto [oa, ob] :
       {std::pair{0, 0}, std::pair{1, 1}, std::pair{0, 3}, std::pair{16, 0}}) {
    SCOPED_TRACE("offsets " + std::to_string(oa) + ", " + std::to_string(ob));
    EXPECT_EQ(bytes_differ(oa, ob, kBytes, -1), 0);
    for (const int64_t at :
         {int64_t{0}, int64_t{15}, int64_t{16 * 20000 + 5}, kBytes - 8, kBytes - 7, kBytes - 1})
      EXPECT_EQ(bytes_differ(oa, ob, kBytes, at), 1) << "byte " << at;
  }
  // Fewer bytes than one word.
  EXPECT_EQ(bytes_differ(0, 0, 5, -1), 0);
  EXPECT_EQ(bytes_differ(0, 0, 5, 4), 1);
}

TEST_F(Flags, NotCloseFindsOneElementOutsideTheTolerance) {
  const int64_t n = 100003;
  std::vector<float> want(static_cast<size_t>(n));
  for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<float>(i % 97) - 48.0f;
  const auto with = [&](int64_t at, float delta) {
    std::vector<float> out = want;
    if (at >= 0) out[static_cast<size_t>(at)] += delta;
    EXPECT_EQ(cudaMemcpy(a_, out.data(), out.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(b_, want.data(), want.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    CheckJob j;
    j.kind = CheckJob::Kind::not_close;
    j.a = a_;
    j.b = b_;
    j.count = n;
    j.type = CloseType::f32;
    j.rtol = j.atol = 1e-3;
    j.flag = flag_;
    return run([&] { return launch_check_jobs({j}, nullptr); });
  };
  EXPECT_EQ(with(-1, 0), 0);
  EXPECT_EQ(with(n - 1, 1e-4f), 0);  // within atol
  EXPECT_EQ(with(n - 1, 0.5f), 1);
  EXPECT_EQ(with(7, 0.5f), 1);
}

// Copy jobs, aligned or not, and a comparison that copies its first operand on the way; ten jobs
// (two launches) each raising its own flag or none.
TEST_F(Flags, CopiesAndComparisonsInOneLaunch) {
  const int64_t n = 4099;  // bytes: 256 words and 3 more
  std::vector<unsigned char> src(static_cast<size_t>(n));
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 13 + 1);
  auto* a = static_cast<unsigned char*>(a_);
  auto* b = static_cast<unsigned char*>(b_);
  ASSERT_EQ(cudaMemcpy(a, src.data(), src.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(b, 0, static_cast<size_t>(kBytes)), cudaSuccess);
  const auto read = [](const void* p, int64_t bytes) {
    std::vector<unsigned char> host(static_cast<size_t>(bytes));
    EXPECT_EQ(cudaMemcpy(host.data(), p, host.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  };
  for (const int shift : {0, 5}) {  // the copy's destination 16-byte aligned, then not
    SCOPED_TRACE("shift " + std::to_string(shift));
    CheckJob copy;
    copy.a = a;
    copy.copy_to = b + 8192 + shift;
    copy.count = n;
    ASSERT_EQ(run([&] { return launch_check_jobs({copy}, nullptr); }), 0);  // a copy raises nothing
    EXPECT_EQ(read(b + 8192 + shift, n), src);
  }
  // A comparison of a with itself that copies a to b: no flag, every byte copied.
  ASSERT_EQ(cudaMemset(b, 0, static_cast<size_t>(kBytes)), cudaSuccess);
  EXPECT_EQ(run([&] { return launch_check_jobs({differ(a, a, n, flag_, b)}, nullptr); }), 0);
  EXPECT_EQ(read(b, n), src);
  // Ten jobs: nine equal comparisons on their own flags, one different on flag 9.
  int* flags = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&flags), 10 * sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMemset(flags, 0, 10 * sizeof(int)), cudaSuccess);
  std::vector<CheckJob> jobs;
  for (int i = 0; i < 10; ++i) jobs.push_back(differ(a, i == 9 ? a + 1 : a, 64, flags + i));
  ASSERT_EQ(launch_check_jobs(jobs, nullptr), cudaSuccess);
  std::vector<int> got(10, -1);
  ASSERT_EQ(cudaMemcpy(got.data(), flags, 10 * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(got, (std::vector<int>{0, 0, 0, 0, 0, 0, 0, 0, 0, 1}));
  cudaFree(flags);
}

// NVML's sampler (its entry points resolved once) reads this GPU's SM clock.
TEST(NvmlSampler, ReadsTheSmClock) {
  if (device_count() <= 0) GTEST_SKIP() << "no CUDA device";
  const Nvml nvml;
  if (!nvml.available()) GTEST_SKIP() << nvml.unavailable_reason();
  const auto s = nvml.sample();
  ASSERT_TRUE(s.has_value());
  EXPECT_GT(s->sm_clock_mhz, 0u);
  std::printf("SM clock %u MHz, %s\n", s->sm_clock_mhz, s->describe().c_str());
  const auto others = nvml.other_processes();
  EXPECT_TRUE(others.has_value());
}

// CUPTI's timer: once the device is drained, a plain flush delivers every launch's kernel records.
// Each launch starts a copy on the timer's stream and one on a side stream; all 200 windows get
// both kernels of every launch, with no forced flush.
TEST(CuptiTimer, APlainFlushDeliversEveryLaunchsKernels) {
  if (device_count() <= 0) GTEST_SKIP() << "no CUDA device";
  std::unique_ptr<LaunchTimer> timer;
  try {
    timer = make_cupti_timer();
  } catch (const std::exception& e) {
    GTEST_SKIP() << "CUPTI unavailable: " << e.what();
  }
  constexpr int64_t kBytes = 1 << 20;
  void* a = nullptr;
  void* b = nullptr;
  cudaStream_t side = nullptr;
  ASSERT_EQ(cudaMalloc(&a, 2 * kBytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, 2 * kBytes), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), cudaSuccess);
  const auto copy = [](const void* from, void* to) {
    CheckJob j;
    j.a = from;
    j.copy_to = to;
    j.count = kBytes;
    return j;
  };
  for (int window = 0; window < 200; ++window) {
    const auto ns = timer->time(
        [&] {
          ASSERT_EQ(launch_check_jobs({copy(a, b)}, nullptr), cudaSuccess);
          ASSERT_EQ(
              launch_check_jobs(
                  {copy(static_cast<char*>(a) + kBytes, static_cast<char*>(b) + kBytes)}, side),
              cudaSuccess);
        },
        5, nullptr);
    ASSERT_EQ(ns.size(), 5u);
    ASSERT_EQ(timer->launch_kernels().size(), 5u);
    for (size_t i = 0; i < ns.size(); ++i) {
      EXPECT_GT(ns[i], 0) << "window " << window << ", launch " << i;
      ASSERT_EQ(timer->launch_kernels()[i].size(), 2u) << "window " << window << ", launch " << i;
    }
  }
  EXPECT_EQ(timer->forced_flushes(), 0);
  cudaStreamDestroy(side);
  cudaFree(a);
  cudaFree(b);
}

}  // namespace
}  // namespace kgate::cuda
