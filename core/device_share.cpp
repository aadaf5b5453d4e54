// The device's sharing between one run's workers (device_share.hpp).
#include "core/device_share.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"

namespace kgate {
namespace {

int open_lock(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(ErrorKind::usage,
                "cannot open the device's lock file " + path + ": " + std::strerror(errno) +
                    " (kgate check --jobs keeps it under --out: is it writable?)");
  return fd;
}

void lock(int fd, int how, const std::string& path) {
  while (::flock(fd, how) != 0) {
    if (errno == EINTR) continue;
    throw Error(ErrorKind::internal, "flock on " + path + " failed: " + std::strerror(errno));
  }
}

double system_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// KGATE_TEST_SHARE_LOG: one line per hold, appended in one write.
void log_hold(const char* kind, double from, double to) {
  const char* path = std::getenv("KGATE_TEST_SHARE_LOG");
  if (!path || !*path) return;
  char line[128];
  const int n = std::snprintf(line, sizeof line, "%d %s %.6f %.6f\n", static_cast<int>(::getpid()),
                              kind, from, to);
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (::write(fd, line, static_cast<size_t>(n)) < 0) {
    // a test's log only
  }
  ::close(fd);
}

}  // namespace

DeviceShare::DeviceShare(std::string path) : path_(std::move(path)) {
  if (path_.empty()) return;
  turn_fd_ = open_lock(path_ + ".turn");
  lock_fd_ = open_lock(path_ + ".lock");
}

void DeviceShare::join() const {
  if (!active()) return;
  std::error_code ignored;
  std::filesystem::create_directories(path_ + ".members", ignored);
  const std::string file = path_ + ".members/" + std::to_string(::getpid());
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(ErrorKind::usage, "cannot write " + file + ": " + std::strerror(errno) +
                                      " (kgate check --jobs keeps it under --out)");
  ::close(fd);
}

std::vector<int> DeviceShare::members() const {
  std::vector<int> pids;
  if (!active()) return pids;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(path_ + ".members", ec)) {
    const std::string name = e.path().filename().string();
    char* end = nullptr;
    const long pid = std::strtol(name.c_str(), &end, 10);
    if (name.empty() || *end != '\0' || pid <= 0 || pid == ::getpid()) continue;
    // Members never leave (a process holds its CUDA context until it has exited): a dead one is
    // gone.
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM)
      pids.push_back(static_cast<int>(pid));
  }
  return pids;
}

DeviceShare::~DeviceShare() {
  if (turn_fd_ >= 0) ::close(turn_fd_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

DeviceShare::Hold::Hold(const DeviceShare* share, bool alone, double waited_s)
    : share_(share), alone_(alone), waited_s_(waited_s), from_(share ? system_seconds() : 0) {}

DeviceShare::Hold::Hold(Hold&& other) noexcept
    : share_(other.share_), alone_(other.alone_), waited_s_(other.waited_s_), from_(other.from_) {
  other.share_ = nullptr;
}

DeviceShare::Hold::~Hold() {
  if (!share_) return;
  const double to = system_seconds();
  share_->release(alone_);
  log_hold(alone_ ? "alone" : "shared", from_, to);
}

DeviceShare::Hold DeviceShare::shared() const {
  if (!active() || mode_ != Mode::none) return Hold(nullptr, false, 0);
  return take(false);
}

DeviceShare::Hold DeviceShare::alone() const {
  if (!active() || mode_ == Mode::alone) return Hold(nullptr, true, 0);
  if (mode_ == Mode::shared)
    throw Error(ErrorKind::internal,
                "DeviceShare::alone() inside a shared hold of the same process (" + path_ + ")");
  return take(true);
}

void DeviceShare::share_until_exit() const {
  if (!active()) return;
  static_cast<void>(new Hold(shared()));  // never destroyed: its locks go with the process
  const double at = system_seconds();
  log_hold("exit", at, at);
}

// Through the turnstile, then the lock: shared, the turnstile left at once; alone, the turnstile
// kept, so that no new sharer comes in while the ones inside finish.
DeviceShare::Hold DeviceShare::take(bool alone) const {
  const auto t0 = std::chrono::steady_clock::now();
  lock(turn_fd_, LOCK_EX, path_ + ".turn");
  try {
    lock(lock_fd_, alone ? LOCK_EX : LOCK_SH, path_ + ".lock");
  } catch (...) {
    ::flock(turn_fd_, LOCK_UN);
    throw;
  }
  if (!alone) ::flock(turn_fd_, LOCK_UN);
  mode_ = alone ? Mode::alone : Mode::shared;
  return Hold(this, alone,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

double DeviceShare::growth_left(double fallback) const {
  if (!active()) return fallback;
  std::ifstream in(path_ + ".growth");
  double left = 0;
  return in >> left ? left : fallback;
}

void DeviceShare::set_growth_left(double seconds) const {
  if (!active()) return;
  const std::string tmp = path_ + ".growth.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out.precision(17);
    out << seconds << "\n";
    if (!out) throw Error(ErrorKind::internal, "cannot write " + tmp);
  }
  std::rename(tmp.c_str(), (path_ + ".growth").c_str());
}

void DeviceShare::release(bool alone) const {
  mode_ = Mode::none;
  ::flock(lock_fd_, LOCK_UN);
  if (alone) ::flock(turn_fd_, LOCK_UN);
}

}  // namespace kgate
