// Per-phase wall time (cost.hpp).
#include "core/cost.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

namespace kgate::cost {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> on{false};
std::function<void()>& sync_fn() {
  static std::function<void()> fn;
  return fn;
}

struct Frame {
  const char* phase;
  Clock::time_point start;
};
struct State {
  std::vector<Frame> stack;
  std::map<std::string, double> totals;
};
State& state() {
  thread_local State s;
  return s;
}

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

void wait_for_device() {
  if (sync_fn()) sync_fn()();
}

}  // namespace

void enable(std::function<void()> sync) {
  sync_fn() = std::move(sync);
  on = true;
}

void disable() {
  on = false;
  sync_fn() = {};
}

bool enabled() { return on.load(std::memory_order_relaxed); }

Scope::Scope(const char* phase) {
  if (!enabled()) return;
  active_ = true;
  wait_for_device();
  State& s = state();
  const auto now = Clock::now();
  if (!s.stack.empty()) s.totals[s.stack.back().phase] += seconds(s.stack.back().start, now);
  s.stack.push_back({phase, now});
}

Scope::~Scope() {
  if (!active_) return;
  try {
    wait_for_device();
  } catch (...) {
    // A fault surfaces where the check looks for it, not here.
  }
  State& s = state();
  if (s.stack.empty()) return;
  const auto now = Clock::now();
  s.totals[s.stack.back().phase] += seconds(s.stack.back().start, now);
  s.stack.pop_back();
  if (!s.stack.empty()) s.stack.back().start = now;
}

const char* current_phase() {
  const State& s = state();
  return s.stack.empty() ? "" : s.stack.back().phase;
}

std::map<std::string, double> take() {
  State& s = state();
  const auto now = Clock::now();
  for (auto& f : s.stack) {  // an open phase: what it took so far
    s.totals[f.phase] += seconds(f.start, now);
    f.start = now;
  }
  std::map<std::string, double> out;
  out.swap(s.totals);
  return out;
}

namespace {

// The process's age from /proc, in clock ticks' resolution (10 ms); -1 where unreadable (a
// sandboxed worker may not read /proc).
double age_from_proc() {
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  std::ifstream uptime_file("/proc/uptime");
  double uptime = 0;
  if (close == std::string::npos || !(uptime_file >> uptime)) return -1;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  // Fields after the command: state is field 3; starttime is field 22.
  for (int i = 3; i < 22 && (rest >> field); ++i) {
  }
  unsigned long long start_ticks = 0;
  if (!(rest >> start_ticks)) return -1;
  const long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0) return -1;
  return std::max(0.0, uptime - static_cast<double>(start_ticks) / static_cast<double>(hz));
}

// Read when this library loads, before any sandbox: the age then, and when.
struct AgeAtLoad {
  double age = age_from_proc();
  Clock::time_point at = Clock::now();
};
const AgeAtLoad age_at_load;

std::atomic<bool> age_counted_from_given{false};
Clock::time_point counted_from;  // written once, before age_counted_from_given is set

}  // namespace

void count_age_from(Clock::time_point given) {
  counted_from = std::min(given, Clock::now());
  age_counted_from_given.store(true);
}

double process_age_s() {
  if (age_counted_from_given.load()) return std::max(0.0, seconds(counted_from, Clock::now()));
  // The later of /proc's (coarse) and the age at load plus the time since (fine): positive from
  // the first moment, right where /proc cannot be read.
  const double since_load =
      age_at_load.age >= 0 ? age_at_load.age + seconds(age_at_load.at, Clock::now()) : -1;
  const double age = std::max(age_from_proc(), since_load);
  return age > 0 ? age : 0;
}

}  // namespace kgate::cost
