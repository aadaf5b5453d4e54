// The planner's choice of a run's backend and shard (plan/targets.hpp), with a probe that says
// whether a GPU is present: every verb's words, and each way a run without a GPU ends.
#include "plan/targets.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace kgate::plan {
namespace {

// A probe that answers `present` and counts how often it was asked.
struct FakeDevice {
  bool present = false;
  int asked = 0;
  DeviceProbe probe() {
    return DeviceProbe([this](std::string* why) {
      ++asked;
      if (!present && why) *why = "no CUDA device";
      return present;
    });
  }
};

RunRequest request(Verb verb, std::string backend = "", std::vector<std::string> packages = {}) {
  RunRequest r;
  r.verb = verb;
  r.backend = std::move(backend);
  r.packages = std::move(packages);
  return r;
}

std::string usage_error(const RunRequest& r, DeviceProbe& device) {
  try {
    choose_backend(r, device);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    return e.what();
  }
  ADD_FAILURE() << "no usage error";
  return "";
}

TEST(Backend, WithoutBackendTheGpuWhenPresentAndNothingSaid) {
  FakeDevice gpu{true};
  auto probe = gpu.probe();
  const auto c = choose_backend(request(Verb::sweep), probe);
  EXPECT_EQ(c.backend, Backend::cuda);
  EXPECT_EQ(c.notice, "");
  EXPECT_FALSE(c.skip_exit_code);
}

TEST(Backend, WithoutGpuTheCpuKernelsInEachVerbsWords) {
  const std::pair<Verb, std::string> said[] = {
      {Verb::check,
       "kgate: no CUDA device — checking the cpu backend's kernels instead (pass --backend cuda "
       "to require a GPU)\n"},
      {Verb::sweep, "kgate: no CUDA device — sweeping the cpu backend's kernels instead\n"},
      {Verb::calibrate, "kgate: no CUDA device — calibrating the cpu backend's kernels instead\n"}};
  for (const auto& [verb, notice] : said) {
    FakeDevice none;
    auto probe = none.probe();
    const auto c = choose_backend(request(verb), probe);
    EXPECT_EQ(c.backend, Backend::cpu);
    EXPECT_EQ(c.notice, notice);
    EXPECT_FALSE(c.skip_exit_code);
  }
}

TEST(Backend, CpuAskedForNeverAsksTheDevice) {
  FakeDevice none;
  auto probe = none.probe();
  const auto c = choose_backend(request(Verb::check, "cpu"), probe);
  EXPECT_EQ(c.backend, Backend::cpu);
  EXPECT_EQ(c.notice, "");
  EXPECT_EQ(none.asked, 0);
}

TEST(Backend, TheProbeIsAskedOnce) {
  FakeDevice none;
  auto probe = none.probe();
  EXPECT_FALSE(probe.present());
  EXPECT_FALSE(probe.present());
  choose_backend(request(Verb::calibrate), probe);
  EXPECT_EQ(none.asked, 1);
  EXPECT_EQ(probe.why(), "no CUDA device");
}

TEST(Backend, CudaWithoutGpuIsAUsageErrorOrTheSkipCode) {
  for (Verb verb : {Verb::check, Verb::sweep, Verb::calibrate}) {
    FakeDevice none;
    auto probe = none.probe();
    EXPECT_EQ(usage_error(request(verb, "cuda"), probe),
              "no CUDA device (--backend cuda needs a GPU; use --backend cpu on machines without "
              "one)");
    auto skip = request(verb, "cuda");
    skip.no_device_exit_code = 77;
    const auto c = choose_backend(skip, probe);
    EXPECT_EQ(c.backend, Backend::cuda);
    ASSERT_TRUE(c.skip_exit_code);
    EXPECT_EQ(*c.skip_exit_code, 77);
    EXPECT_EQ(c.skip_line, "SKIPPED: no CUDA device\n");
  }
}

TEST(Backend, PackagesRunOnCudaAndCheckSaysSoInItsOwnWords) {
  FakeDevice gpu{true};
  auto with_gpu = gpu.probe();
  EXPECT_EQ(choose_backend(request(Verb::check, "", {"pkg"}), with_gpu).backend, Backend::cuda);
  FakeDevice none;
  auto probe = none.probe();
  EXPECT_EQ(usage_error(request(Verb::check, "", {"pkg"}), probe),
            "no CUDA device: checking a package runs it on a GPU; `kgate validate PKG` checks a "
            "package (manifest and NVRTC compile) without one");
  auto skip = request(Verb::check, "", {"pkg"});
  skip.no_device_exit_code = 77;
  EXPECT_EQ(choose_backend(skip, probe).skip_line,
            "SKIPPED: no CUDA device (the packages are valid and compile; running them needs a "
            "GPU)\n");
  // kgate sweep's packages: the words of --backend cuda.
  EXPECT_EQ(usage_error(request(Verb::sweep, "", {"pkg"}), probe),
            "no CUDA device (--backend cuda needs a GPU; use --backend cpu on machines without "
            "one)");
}

TEST(Backend, PackagesOnCpuAreRefused) {
  EXPECT_NO_THROW(refuse_packages_on_cpu(request(Verb::check, "cpu")));
  EXPECT_NO_THROW(refuse_packages_on_cpu(request(Verb::check, "cuda", {"pkg"})));
  try {
    refuse_packages_on_cpu(request(Verb::sweep, "cpu", {"pkg"}));
    FAIL() << "packages on --backend cpu were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "packages run on the cuda backend: drop --backend cpu (or sweep in-tree cpu kernels "
              "with --kernel)");
  }
}

TEST(Shard, DealsSortedNamesRoundRobin) {
  const std::vector<std::string> names = {"d", "a", "c", "b", "e"};
  EXPECT_EQ(shard_names(names, parse_shard("1/2")), (std::vector<std::string>{"a", "c", "e"}));
  EXPECT_EQ(shard_names(names, parse_shard("2/2")), (std::vector<std::string>{"b", "d"}));
  EXPECT_TRUE(shard_names(names, parse_shard("6/6")).empty());
  for (const char* bad : {"0/2", "3/2", "1/0", "1-2", "1/2x", ""})
    EXPECT_THROW(parse_shard(bad), Error) << bad;
}

}  // namespace
}  // namespace kgate::plan
