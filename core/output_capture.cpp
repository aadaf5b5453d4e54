// Bounded output records (see the header).
#include "core/output_capture.hpp"

#include <algorithm>

namespace kgate {

void OutputCapture::add(std::string_view bytes) {
  total_ += bytes.size();
  lines_ += static_cast<uint64_t>(std::count(bytes.begin(), bytes.end(), '\n'));
  if (head_.size() < head_max_) {
    const std::size_t n = std::min(bytes.size(), head_max_ - head_.size());
    head_.append(bytes.substr(0, n));
    bytes.remove_prefix(n);
  }
  if (bytes.empty()) return;
  tail_.append(bytes);
  // Trimmed lazily, so that a flood of small writes costs amortized constant time per byte.
  if (tail_.size() > 2 * tail_max_) tail_.erase(0, tail_.size() - tail_max_);
}

uint64_t OutputCapture::dropped_bytes() const {
  const uint64_t kept = head_.size() + std::min<uint64_t>(tail_.size(), tail_max_);
  return total_ > kept ? total_ - kept : 0;
}

std::string OutputCapture::text() const {
  std::string tail = tail_.size() > tail_max_ ? tail_.substr(tail_.size() - tail_max_) : tail_;
  const uint64_t dropped = dropped_bytes();
  if (dropped == 0) return head_ + tail;
  std::string head = head_;
  // Whole lines where possible: cut the head after its last newline, the tail after its first.
  if (auto nl = head.rfind('\n'); nl != std::string::npos && nl + 1 >= head.size() / 2)
    head.erase(nl + 1);
  if (auto nl = tail.find('\n'); nl != std::string::npos && nl < tail.size() / 2)
    tail.erase(0, nl + 1);
  const uint64_t cut = total_ - head.size() - tail.size();
  const uint64_t cut_lines = lines_ -
                             static_cast<uint64_t>(std::count(head.begin(), head.end(), '\n')) -
                             static_cast<uint64_t>(std::count(tail.begin(), tail.end(), '\n'));
  if (!head.empty() && head.back() != '\n') head += '\n';
  return head + "[... " + std::to_string(cut) + " bytes (" + std::to_string(cut_lines) +
         " lines) of output dropped ...]\n" + tail;
}

}  // namespace kgate
