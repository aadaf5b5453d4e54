#include "gates/speed/checked_arms.hpp"

#include <sys/random.h>

#include <algorithm>
#include <random>

#include "core/safe_text.hpp"

namespace kgate::speed {
namespace {

std::string joined_kernels(const KernelSet& set) {
  return set.empty() ? "(none)" : join(set, "; ");
}

}  // namespace

uint64_t system_random() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, 0) == static_cast<ssize_t>(sizeof v)) return v;
  std::random_device entropy;
  return (uint64_t{entropy()} << 32) ^ entropy();
}

CheckedArms::CheckedArms(LaunchTimer& timer, size_t sets, size_t entries,
                         int64_t launches_per_block, std::array<bool, 2> checked, Hooks hooks,
                         const DeviceMonitor* monitor, std::array<std::string, 2> arm_names,
                         std::function<uint64_t()> random)
    : timer_(timer),
      sets_(std::max<size_t>(1, sets)),
      entries_(std::max<size_t>(1, entries)),
      launches_per_block_(std::max<int64_t>(1, launches_per_block)),
      checked_(checked),
      hooks_(std::move(hooks)),
      monitor_(monitor),
      arm_names_(std::move(arm_names)),
      random_(std::move(random)),
      start_(std::chrono::steady_clock::now()) {}

void CheckedArms::begin_blocks(bool check) {
  timed_ = true;
  checking_ = check;
  count_ = {0, 0};
  clocks_.clear();
  if (check) draw_check_indices();
}

KernelSet CheckedArms::kernels(int arm) const {
  const auto it = kernels_.find({arm, 0});
  return it == kernels_.end() ? KernelSet{} : it->second;
}

std::pair<unsigned, unsigned> CheckedArms::clock_range() const {
  if (clocks_.empty()) return {0, 0};
  const auto [lo, hi] = std::minmax_element(clocks_.begin(), clocks_.end());
  return {*lo, *hi};
}

std::vector<double> CheckedArms::measure(int arm, int launches) {
  int64_t& n = count_[static_cast<size_t>(arm)];
  const int64_t check_at = checking_ ? check_at_[static_cast<size_t>(arm)] : -1;
  std::optional<size_t> captured;  // the set of the checked launch, until its outputs are copied
  const std::function<void()> between = [&] {
    if (captured) {
      hooks_.capture(arm, *captured);
      captured.reset();
    }
    if (checking_ && hooks_.perturb)
      hooks_.perturb(arm, static_cast<size_t>(n) % sets_,
                     n != check_at && static_cast<bool>(hooks_.flush));
    if (n == check_at) {
      checked_set_[static_cast<size_t>(arm)] = static_cast<int64_t>(static_cast<size_t>(n) % sets_);
      hooks_.prepare(arm, static_cast<size_t>(n) % sets_);
    } else if (hooks_.refill) {
      hooks_.refill(arm, static_cast<size_t>(n) % sets_);
    }
    if (hooks_.flush) hooks_.flush();
  };
  const auto launch = [&] {
    const int64_t i = n++;
    const size_t set = static_cast<size_t>(i) % sets_;
    hooks_.launch(arm, set);
    if (i == check_at) captured = set;
  };
  auto ns = timer_.time(launch, launches, between);
  if (captured) {
    hooks_.capture(arm, *captured);
    unsettled_ = true;
  }
  check_kernels(arm, n - launches);
  return ns;
}

// Once per block: the block's checks are judged and its inputs redrawn (first: the redraw's copies
// run while the host reads the monitor), then the monitor's clocks and throttling (a throttled
// block is dropped), and the processes on the device (another one makes the comparison INVALID).
std::optional<std::string> CheckedArms::block_disturbance() {
  finish_checks();
  std::optional<std::string> d;
  if (monitor_ && timed_) {
    if (auto s = monitor_->sample()) {
      if (s->throttled) d = s->description;
      clocks_.push_back(s->sm_clock_mhz);
    }
    if (const auto others = monitor_->other_processes(); others && !others->empty()) {
      std::string list;
      for (const auto& p : *others)
        list += (list.empty() ? "" : ", ") + std::string("pid ") + std::to_string(p.pid) + " (" +
                std::to_string(p.used_bytes >> 20) + " MiB)";
      throw TimingInvalid{std::to_string(others->size()) +
                          " other process(es) held the GPU during block " + std::to_string(block_) +
                          ": " + list + "; a timing must have the GPU to itself"};
    }
  }
  return d;
}

void CheckedArms::block_done() {
  finish_checks();
  finished_ = false;
  unsettled_ = false;
  ++block_;
  count_ = {0, 0};
  if (checking_) draw_check_indices();
}

double CheckedArms::seconds_used() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

// The block's checked launches are recorded and judged, and the next block's inputs drawn (once).
void CheckedArms::finish_checks() {
  if (!checking_ || finished_) return;
  finished_ = true;
  for (int arm = 0; arm < 2; ++arm)
    if (checked_[static_cast<size_t>(arm)] && checked_set_[static_cast<size_t>(arm)] >= 0)
      checked_launches_.push_back({block_, arm, check_at_[static_cast<size_t>(arm)]});
  hooks_.block_done(block_, checked_set_, !unsettled_);
}

// The kernel-set check. Warm-up's launches say which kernels (names, grids, blocks) a launch of
// each arm starts on each input contents (the bank entry: a kernel, eager's varlen softmax say,
// may pick its kernels by its integer inputs); every timed launch on the same contents must start
// the same, on whatever stream or thread: a change (work moved elsewhere, a kernel that runs
// otherwise when timed) makes the comparison INVALID. An entry warm-up did not reach is learned
// at its first timed launch. A module loaded inside a timed launch (a lazy load or a run-time
// compile: they belong before the first timed block) makes it INVALID too.
void CheckedArms::check_kernels(int arm, int64_t first_launch) {
  const auto& sets = timer_.launch_kernels();
  const std::string& name = arm_names_[static_cast<size_t>(arm)];
  for (size_t j = 0; j < sets.size(); ++j) {
    const int64_t launch = first_launch + static_cast<int64_t>(j);
    const size_t set = static_cast<size_t>(launch) % sets_;
    const size_t entry = (static_cast<size_t>(timed_ ? block_ : 0) + set) % entries_;
    auto [it, first_seen] = kernels_.try_emplace({arm, entry}, sets[j]);
    if (!timed_) it->second = sets[j];  // warm-up: its last launch on these contents
    if (!timed_ || first_seen || sets[j] == it->second) continue;
    throw TimingInvalid{
        "the kernels of a timed launch changed: warm-up's launches of '" + name + "' started [" +
        joined_kernels(it->second) + "], its launch " + std::to_string(launch + 1) + " of block " +
        std::to_string(block_) + " (same input contents) started [" + joined_kernels(sets[j]) +
        "] (work moved to other kernels, or a kernel that runs differently when timed)"};
  }
  if (!timed_) return;
  if (const int loads = timer_.module_loads(); loads > 0)
    throw TimingInvalid{std::to_string(loads) + " module(s) loaded inside a timed launch of '" +
                        name + "' (block " + std::to_string(block_) +
                        "): a lazy load or a run-time compile; every module must be loaded "
                        "before the first timed block"};
}

// The candidate is checked in every block. A kernel baseline, the kernel already accepted, is
// checked in block 0 and in a random quarter of the later blocks (the random source decides): one
// that is wrong in every timed launch is caught in block 0, and its checks cost a quarter of the
// candidate's wall time. (A wrong baseline makes a comparison invalid, never a candidate accepted.)
void CheckedArms::draw_check_indices() {
  for (size_t arm = 0; arm < 2; ++arm) {
    const bool check = checked_[arm] && (arm == 1 || block_ == 0 || (random_() & 3) == 0);
    check_at_[arm] =
        check ? static_cast<int64_t>(random_() % static_cast<uint64_t>(launches_per_block_)) : -1;
    checked_set_[arm] = -1;
  }
}

}  // namespace kgate::speed
