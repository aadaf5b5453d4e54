// The two arms of a timed comparison with checked timing, behind backend-neutral interfaces: a
// launch timer (device time per launch, the kernels each launch started, modules loaded while
// timed) and a device monitor (clocks, throttling, other processes on the device). The runner
// gives it CUPTI and NVML (runtime/cuda); the tests give it fakes. Torch-free.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/report.hpp"
#include "gates/speed/interleave.hpp"

namespace kgate::speed {

/// The kernels one launch started, one "name<<<grid, block>>>" string each, sorted.
using KernelSet = std::vector<std::string>;

/// Device-side timing of launches (runtime/cuda/timer.hpp: CUPTI, or CUDA events).
class LaunchTimer {
 public:
  virtual ~LaunchTimer() = default;
  /// Runs `launch` `count` times (each launch may start several kernels) and returns each launch's
  /// device time in nanoseconds. `between` runs before each launch, unmeasured (its kernels are
  /// kgate's own and never count). Returns once the launches' work is done.
  virtual std::vector<double> time(const std::function<void()>& launch, int count,
                                   const std::function<void()>& between) = 0;
  /// "cupti", "cupti-serial" or "events".
  virtual const char* name() const = 0;
  /// The kernels each launch of the last time() call started (empty when the timer does not see
  /// kernels: events).
  virtual const std::vector<KernelSet>& launch_kernels() const {
    static const std::vector<KernelSet> none;
    return none;
  }
  /// Modules loaded inside the launches of the last time() call (a lazy load or a run-time compile
  /// while timed), or -1 when the timer cannot see module loads.
  virtual int module_loads() const { return -1; }
  /// time() calls whose records a plain flush did not all deliver, so that a forced flush followed
  /// (CUPTI only; expected 0).
  virtual int64_t forced_flushes() const { return 0; }
};

/// One reading of the device's state during a timing.
struct DeviceSample {
  unsigned sm_clock_mhz = 0;
  bool throttled = false;   ///< a throttle reason that disturbs a timing
  std::string description;  ///< the reasons, in words
};

/// Another process holding the device.
struct DeviceUser {
  unsigned pid = 0;
  uint64_t used_bytes = 0;
};

/// What the device says about itself while timed (NVML on NVIDIA GPUs).
class DeviceMonitor {
 public:
  virtual ~DeviceMonitor() = default;
  /// nullopt when the monitor cannot read the device.
  virtual std::optional<DeviceSample> sample() const = 0;
  /// Processes on the device other than this one; nullopt when the monitor cannot tell.
  virtual std::optional<std::vector<DeviceUser>> other_processes() const = 0;
};

/// Thrown by the block hook when a checked timed launch's output fails the case's rule.
struct WrongWhileTimed {
  int arm = 1;
  CaseResult result;
};

/// Thrown by CheckedArms::measure when a timed block breaks what the comparison rests on: the
/// kernels a launch starts changed, a module was loaded inside a timed launch, another process
/// used the device. The comparison is INVALID for `reason`.
struct TimingInvalid {
  std::string reason;
};

/// 64 bits from the system's cryptographic random source (getrandom): nothing a kernel can read
/// predicts it.
uint64_t system_random();

// The two arms of a timed comparison (0 the baseline, 1 the candidate), for run_interleaved, with
// checked timing. Each arm's launches cycle through `sets` buffer sets (its i-th launch in a block
// uses set i % sets), and one launch per block of each checked arm, at an index drawn from the
// random source, is judged: `prepare` runs just before it and `capture` right after it, both
// between launches (unmeasured, before the flush); `block_done` runs at the end of the block,
// then the block's inputs are redrawn. So a kernel cannot tell a checked launch from the others,
// nor live on a result cached by pointer across blocks.
class CheckedArms final : public ArmTimer {
 public:
  struct Hooks {
    std::function<void(int arm, size_t set)> launch;
    std::function<void()> flush;  // before every launch (empty: warm timing)
    /// Before every timed launch, unmeasured; `before_flush`: a flush follows at once (and no
    /// check of this launch's inputs comes between).
    std::function<void(int arm, size_t set, bool before_flush)> perturb;
    std::function<void(int arm, size_t set)> prepare;
    /// Before every launch that is not checked (prepare fills that one's outputs), unmeasured:
    /// outputs the kernel reads get their start values again. Empty: none has one.
    std::function<void(int arm, size_t set)> refill;
    std::function<void(int arm, size_t set)> capture;
    /// Judges the block's captures (throws WrongWhileTimed) and redraws the inputs for the next.
    /// `settled`: no work was queued since the block's last launches were drained (a checked
    /// launch that ended a half-block queues its capture afterwards).
    std::function<void(int64_t block, const std::array<int64_t, 2>& checked_set, bool settled)>
        block_done;
  };

  /// `entries`: the bank of input contents; block b's buffer set s holds entry (b + s) % entries.
  /// `monitor` may be null. `random`: the source of the checked launches' indices (default:
  /// system_random).
  CheckedArms(LaunchTimer& timer, size_t sets, size_t entries, int64_t launches_per_block,
              std::array<bool, 2> checked, Hooks hooks, const DeviceMonitor* monitor,
              std::array<std::string, 2> arm_names,
              std::function<uint64_t()> random = system_random);

  /// Ends warm-up and starts block 0 (counts, check indices, disturbances reset); `check`: checked
  /// timing (one judged launch per kernel arm per block).
  void begin_blocks(bool check);
  /// The kernels one launch of `arm` starts on the first bank entry, as warm-up showed them.
  KernelSet kernels(int arm) const;
  /// The monitor's SM clock over the timed blocks: {min, max} MHz, {0, 0} when not read.
  std::pair<unsigned, unsigned> clock_range() const;
  const std::vector<SpeedComparison::CheckedLaunch>& checked_launches() const {
    return checked_launches_;
  }

  std::vector<double> measure(int arm, int launches) override;
  std::optional<std::string> block_disturbance() override;
  void block_done() override;
  double seconds_used() const override;

 private:
  void finish_checks();
  void check_kernels(int arm, int64_t first_launch);
  void draw_check_indices();

  LaunchTimer& timer_;
  size_t sets_;
  size_t entries_;
  int64_t launches_per_block_;
  std::array<bool, 2> checked_;
  Hooks hooks_;
  const DeviceMonitor* monitor_;
  std::array<std::string, 2> arm_names_;
  std::function<uint64_t()> random_;
  std::map<std::pair<int, size_t>, KernelSet>
      kernels_;  // (arm, bank entry) -> its launch's kernels
  std::chrono::steady_clock::time_point start_;
  bool timed_ = false;  // warm-up is over
  bool checking_ = false;
  bool unsettled_ = false;  // work was queued after a half-block's launches were drained
  bool finished_ = false;   // this block's checks were judged (finish_checks)
  int64_t block_ = 0;
  std::array<int64_t, 2> count_{0, 0}, check_at_{-1, -1}, checked_set_{-1, -1};
  std::vector<SpeedComparison::CheckedLaunch> checked_launches_;
  std::vector<unsigned> clocks_;
};

}  // namespace kgate::speed
