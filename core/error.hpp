// Errors and exit codes: library code throws, only main() turns an exception into an exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace kgate {

/// What kind of problem an Error reports; decides the exit code when it reaches main().
enum class ErrorKind {
  usage,    ///< bad command line or configuration (exit 4)
  package,  ///< a kernel package or manifest is invalid (exit 4)
  device,   ///< a CUDA / NVRTC / CUPTI call failed
  internal  ///< a bug in kgate itself
};

/// The one exception type kgate throws. The message names the file / field / call and the fix.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

[[noreturn]] inline void throw_usage(const std::string& message) {
  throw Error(ErrorKind::usage, message);
}

/// Process exit codes of the kgate command (a documented contract; see docs/cli.md, "Exit codes").
enum class ExitCode : int {
  ok = 0,           ///< every gate passed
  correctness = 1,  ///< at least one kernel is incorrect (or faulted / hung)
  regression = 2,   ///< a statistically significant speed regression
  /// inconclusive or invalid measurement, when the policy says that fails; and, whatever the
  /// policy, a kernel that no case ran (Outcome::unchecked)
  inconclusive = 3,
  usage = 4,     ///< usage, configuration or package error
  internal = 5,  ///< kgate itself failed (a bug: please report it)
};

}  // namespace kgate
