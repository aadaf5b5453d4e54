// Several worker processes of one run on one device (kgate check --jobs): correctness work shares
// the device, and what is timed has it alone. Two lock files (flock): a turnstile every holder
// passes, so that one waiting to be alone keeps new sharers out, and the lock itself, shared or
// exclusive. A holder that dies (a crash, the watchdog's kill) releases both with its process.
//   DeviceShare share(path);
//   { auto s = share.shared(); run_case(); }         // alongside the other workers' cases
//   { auto a = share.alone(); time_kernel(); }       // once every case running has ended
// KGATE_TEST_SHARE_LOG=FILE (for tests): each hold appends "PID shared|alone FROM TO" to FILE
// (share_until_exit: "PID exit AT AT"),
// the times in seconds of the system clock, so that a test can see that no hold overlapped one
// held alone.
#pragma once

#include <string>
#include <vector>

namespace kgate {

class DeviceShare {
 public:
  /// `path` names the run's lock for one device (its two files are PATH.turn and PATH.lock,
  /// created if missing); empty: no sharing, every hold is free.
  explicit DeviceShare(std::string path = {});
  ~DeviceShare();
  DeviceShare(const DeviceShare&) = delete;
  DeviceShare& operator=(const DeviceShare&) = delete;

  class Hold {
   public:
    Hold(Hold&& other) noexcept;
    Hold& operator=(Hold&&) = delete;
    ~Hold();
    /// Seconds spent waiting for this hold.
    double waited_s() const { return waited_s_; }

   private:
    friend class DeviceShare;
    Hold(const DeviceShare* share, bool alone, double waited_s);
    const DeviceShare* share_;
    bool alone_;
    double waited_s_;
    double from_ = 0;  // system clock seconds (KGATE_TEST_SHARE_LOG)
  };

  /// Blocks while another holder is alone or waiting to be; then shares the device. Inside a hold
  /// of this process's own it is that hold (nothing more to wait for).
  Hold shared() const;
  /// Blocks until no other holder shares or has the device; then has it alone. Inside this
  /// process's own alone() it is that hold; inside a shared one it is an internal error (two
  /// holders waiting to be alone while sharing would wait for each other).
  Hold alone() const;
  /// Shares the device from here to the process's end (a worker's last device work: its memory
  /// given back, its context torn down at exit): the hold is never released, its locks go with
  /// the process. This DeviceShare must then never be destroyed. KGATE_TEST_SHARE_LOG: a line
  /// "PID exit AT AT" once it holds.
  void share_until_exit() const;
  bool active() const { return lock_fd_ >= 0; }
  /// Registers this process as one that holds a context on the device (PATH.members/PID), once it
  /// does; members() lists it to the others for as long as it lives.
  void join() const;
  /// The other live processes that joined: while one is alone, they wait, idle.
  std::vector<int> members() const;
  /// The run's budget growth left on this device (kgate check --budget-growth), kept beside the
  /// lock in PATH.growth: what the parent put there, less what each worker's timing took. Read and
  /// written while alone (timings never overlap on one device); `fallback` where none is kept.
  double growth_left(double fallback) const;
  void set_growth_left(double seconds) const;
  const std::string& path() const { return path_; }

 private:
  Hold take(bool alone) const;
  void release(bool alone) const;
  std::string path_;
  int turn_fd_ = -1, lock_fd_ = -1;
  enum class Mode { none, shared, alone };
  mutable Mode mode_ = Mode::none;
};

}  // namespace kgate
