// A bounded record of a process's output: its first and last bytes, and how much fell between.
// Workers run kernels that may print without end (device printf); their output must neither flood
// the log nor stall the worker, and what it said first and last must stay readable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kgate {

class OutputCapture {
 public:
  explicit OutputCapture(std::size_t head_bytes = 8 * 1024, std::size_t tail_bytes = 8 * 1024)
      : head_max_(head_bytes), tail_max_(tail_bytes) {}

  /// Appends output as it arrives.
  void add(std::string_view bytes);

  uint64_t total_bytes() const { return total_; }
  uint64_t total_lines() const { return lines_; }
  /// Bytes neither in the head nor in the tail.
  uint64_t dropped_bytes() const;
  bool empty() const { return total_ == 0; }

  /// The head, a line "[... N bytes (M lines) dropped ...]" when something was, and the tail, each
  /// cut at line boundaries where one is near; not yet made safe for a log (see safe_log_text).
  std::string text() const;

 private:
  std::size_t head_max_, tail_max_;
  std::string head_, tail_;
  uint64_t total_ = 0, lines_ = 0;
};

}  // namespace kgate
