// Where a check spends its time (kgate check --cost): exclusive wall seconds per phase, per thread.
// A phase is entered with a Scope; a Scope opened inside another pauses the outer one, so the
// phases of a kernel add up to the time spent in them. Off (the default) a Scope costs a flag
// test; on, each Scope's ends wait for the device (the sync enable() is given), so that a phase's
// asynchronous GPU work is counted in it and not in the next.
//   { cost::Scope s("reference"); expected = ref.eager(in, attrs); }
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>

namespace kgate::cost {

/// Turns measuring on for the process; `sync` waits for the device (empty: nothing to wait for).
void enable(std::function<void()> sync);
/// Turns it off again (open scopes still end their phases).
void disable();
bool enabled();

class Scope {
 public:
  explicit Scope(const char* phase);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  bool active_ = false;
};

/// This thread's innermost open phase ("" when measuring is off or none is open).
const char* current_phase();

/// This thread's seconds per phase since the last take(), and resets them.
std::map<std::string, double> take();

/// Seconds since this process started (/proc/self/stat), 0 where unknown: what a worker spent
/// before its first phase (loading LibTorch and kgate's libraries, reading the plan). A worker
/// started ahead of its kernel counts from when it was given it (count_age_from).
double process_age_s();

/// From now on process_age_s() counts from `given` (steady_clock, the machine's monotonic clock):
/// a worker started ahead of its kernel (cli/worker.hpp) loaded its libraries while the kernel
/// before it ran, and was given its kernel then; its startup is what it spent from then.
void count_age_from(std::chrono::steady_clock::time_point given);

}  // namespace kgate::cost
