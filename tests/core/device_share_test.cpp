// The device's sharing between worker processes (core/device_share.hpp), with real processes:
// sharers overlap, one alone waits for every sharer inside, a holder waiting to be alone keeps new
// sharers out until it is done, a killed holder releases, and a process's own holds nest.
#include "core/device_share.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"

namespace kgate {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double now_s() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }
void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

class DeviceShareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kgate-share-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    path_ = (dir_ / "gpu0").string();
  }
  void TearDown() override {
    for (pid_t p : children_) {
      ::kill(p, SIGKILL);
      ::waitpid(p, nullptr, 0);
    }
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  // A child process running `body` with a DeviceShare of its own; its exit code is body's.
  template <typename Body>
  pid_t child(Body body) {
    std::fflush(nullptr);
    const pid_t p = ::fork();
    if (p == 0) {
      int rc = 1;
      try {
        DeviceShare share(path_);
        rc = body(share);
      } catch (...) {
        rc = 2;
      }
      ::_exit(rc);
    }
    children_.push_back(p);
    return p;
  }
  int wait_for(pid_t p) {
    int status = 0;
    ::waitpid(p, &status, 0);
    children_.erase(std::remove(children_.begin(), children_.end(), p), children_.end());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  // A marker file a child touches (the parent polls for it).
  fs::path marker(const std::string& name) const { return dir_ / name; }
  static void touch(const fs::path& p) { std::fclose(std::fopen(p.c_str(), "w")); }
  static bool wait_marker(const fs::path& p, double timeout_s = 10) {
    const double until = now_s() + timeout_s;
    while (!fs::exists(p))
      if (now_s() > until) return false;
      else sleep_ms(2);
    return true;
  }

  fs::path dir_;
  std::string path_;
  std::vector<pid_t> children_;
};

TEST_F(DeviceShareTest, SharersOverlap) {
  const auto in = marker("in"), go = marker("go");
  const pid_t p = child([&](DeviceShare& s) {
    auto hold = s.shared();
    touch(in);
    return wait_marker(go) ? 0 : 3;
  });
  ASSERT_TRUE(wait_marker(in));
  DeviceShare share(path_);
  const double t0 = now_s();
  { auto hold = share.shared(); }  // the child still shares: no wait
  EXPECT_LT(now_s() - t0, 1.0);
  touch(go);
  EXPECT_EQ(wait_for(p), 0);
}

TEST_F(DeviceShareTest, AloneWaitsForEverySharerInside) {
  const auto in = marker("in");
  const pid_t p = child([&](DeviceShare& s) {
    auto hold = s.shared();
    touch(in);
    sleep_ms(400);
    return 0;
  });
  ASSERT_TRUE(wait_marker(in));
  DeviceShare share(path_);
  auto hold = share.alone();
  EXPECT_GT(hold.waited_s(), 0.2);
  EXPECT_EQ(wait_for(p), 0);
}

TEST_F(DeviceShareTest, OneWaitingToBeAloneKeepsNewSharersOut) {
  const auto in = marker("in"), go = marker("go"), alone_at = marker("alone");
  // Child 1 shares until told; child 2 then waits to be alone; the parent asks to share after
  // child 2 waits, and must come in only after child 2 was alone and left.
  const pid_t sharer = child([&](DeviceShare& s) {
    auto hold = s.shared();
    touch(in);
    return wait_marker(go) ? 0 : 3;
  });
  ASSERT_TRUE(wait_marker(in));
  const auto asking = marker("asking");
  const pid_t loner = child([&](DeviceShare& s) {
    touch(asking);
    auto hold = s.alone();
    touch(alone_at);
    sleep_ms(200);
    return 0;
  });
  ASSERT_TRUE(wait_marker(asking));
  sleep_ms(150);  // child 2 is now waiting (behind child 1's share), holding the turnstile
  std::thread release([&] {
    sleep_ms(300);
    touch(go);
  });
  DeviceShare share(path_);
  double waited = 0;
  bool after_alone = false;
  {
    auto hold = share.shared();
    waited = hold.waited_s();
    after_alone = fs::exists(alone_at);
  }  // released before the children are waited for (child 2 may still wait to be alone)
  release.join();
  EXPECT_TRUE(after_alone) << "a new sharer came in while one waited to be alone";
  EXPECT_GT(waited, 0.4);  // 300 ms until child 1 left, then child 2's 200 ms alone
  EXPECT_EQ(wait_for(sharer), 0);
  EXPECT_EQ(wait_for(loner), 0);
}

// A worker's end: it shares from share_until_exit() to its process's end (its context torn down
// at exit), so one waiting to be alone starts only once that process has gone.
TEST_F(DeviceShareTest, SharingUntilExitEndsWithTheProcess) {
  const auto in = marker("in");
  std::fflush(nullptr);
  const pid_t p = ::fork();
  if (p == 0) {
    const auto* share = new DeviceShare(path_);  // never destroyed, as the contract asks
    share->share_until_exit();
    touch(in);
    sleep_ms(400);  // the teardown
    ::_exit(0);
  }
  children_.push_back(p);
  ASSERT_TRUE(wait_marker(in));
  DeviceShare share(path_);
  auto hold = share.alone();
  EXPECT_GT(hold.waited_s(), 0.2);
  int status = 0;
  EXPECT_EQ(::waitpid(p, &status, WNOHANG), p) << "alone while the exiting process still shared";
  children_.erase(std::remove(children_.begin(), children_.end(), p), children_.end());
}

TEST_F(DeviceShareTest, AKilledHolderReleases) {
  const auto in = marker("in");
  const pid_t p = child([&](DeviceShare& s) {
    auto hold = s.alone();
    touch(in);
    sleep_ms(60000);
    return 0;
  });
  ASSERT_TRUE(wait_marker(in));
  ::kill(p, SIGKILL);
  wait_for(p);
  DeviceShare share(path_);
  const double t0 = now_s();
  { auto hold = share.alone(); }
  EXPECT_LT(now_s() - t0, 2.0);
}

TEST_F(DeviceShareTest, AProcesssOwnHoldsNest) {
  DeviceShare share(path_);
  {
    auto alone = share.alone();
    auto inner = share.shared();  // already alone: nothing to wait for
    EXPECT_EQ(inner.waited_s(), 0);
  }
  {
    auto shared = share.shared();
    EXPECT_THROW(share.alone(), Error);
  }
  // Released: another process may be alone now.
  const pid_t p = child([&](DeviceShare& s) {
    auto hold = s.alone();
    return 0;
  });
  EXPECT_EQ(wait_for(p), 0);
}

TEST_F(DeviceShareTest, MembersAreTheOtherLiveProcessesThatJoined) {
  const auto in = marker("in"), go = marker("go");
  const pid_t p = child([&](DeviceShare& s) {
    s.join();
    touch(in);
    return wait_marker(go) ? 0 : 3;
  });
  const pid_t q = child([&](DeviceShare& s) { return 0; });  // never joins
  ASSERT_TRUE(wait_marker(in));
  DeviceShare share(path_);
  share.join();
  EXPECT_EQ(share.members(), std::vector<int>{p});  // not this process, not one that never joined
  touch(go);
  EXPECT_EQ(wait_for(p), 0);
  EXPECT_EQ(wait_for(q), 0);
  EXPECT_TRUE(share.members().empty());  // a member that has exited is gone
}

TEST_F(DeviceShareTest, NoPathSharesNothing) {
  DeviceShare share;
  EXPECT_FALSE(share.active());
  auto a = share.alone();
  auto b = share.shared();
  EXPECT_EQ(a.waited_s(), 0);
}

}  // namespace
}  // namespace kgate
