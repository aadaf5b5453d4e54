// The worker progress protocol of kgate check: the line a worker writes per correctness case, the
// parent's reader of the whole file, and the per-case watchdog that follows it as it grows.
#include "cli/progress.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

namespace kgate::cli {
namespace fs = std::filesystem;

// A message on one line (the progress file holds one case per line).
std::string one_line(std::string text) {
  for (char& ch : text)
    if (ch == '\n' || ch == '\r') ch = ' ';
  if (text.size() > 2000) text.resize(2000);
  return text;
}

std::string progress_line(size_t index, size_t total, const Case& c, const CaseResult* result) {
  if (index >= total) return "done " + std::to_string(total) + "\n";
  if (!result)
    return "start " + std::to_string(index) + " " + std::to_string(total) + " " + c.id() + "\n";
  return "end " + std::to_string(index) + " " + std::to_string(total) + " " + c.id() + " " +
         outcome_name(result->outcome) + " " +
         (result->rule == Reason::none ? "-" : reason_name(result->rule)) + " " +
         one_line(result->message) + "\n";
}

namespace {

// One line of the progress file, as far as it parses; `complete` when every field of its kind did.
struct ProgressEvent {
  std::string kind;  // start, end, done (anything else is ignored)
  int64_t index = 0, total = 0;
  std::string id, outcome, rule, message;
  bool complete = false;
};

ProgressEvent parse_progress_line(const std::string& line) {
  ProgressEvent e;
  std::istringstream f(line);
  f >> e.kind;
  if (e.kind == "done") {
    e.complete = static_cast<bool>(f >> e.total);
  } else if (e.kind == "start") {
    e.complete = static_cast<bool>(f >> e.index >> e.total >> e.id);
  } else if (e.kind == "end") {
    e.complete = static_cast<bool>(f >> e.index >> e.total >> e.id >> e.outcome >> e.rule);
    std::getline(f, e.message);
    if (!e.message.empty() && e.message.front() == ' ') e.message.erase(0, 1);
  }
  return e;
}

}  // namespace

WorkerProgress read_progress(const fs::path& path) {
  WorkerProgress p;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const ProgressEvent e = parse_progress_line(line);
    if (e.kind == "done") {
      p.total = e.total;
      p.done = true;
      p.started.reset();
    } else if (e.kind == "start") {
      if (!e.complete) continue;
      p.total = e.total;
      p.started_id = e.id;
      p.started = e.index;
    } else if (e.kind == "end") {
      // A rule the worker could not have written: the line is damaged, as an incomplete one.
      const std::optional<Reason> rule = e.rule == "-" ? Reason::none : find_reason(e.rule);
      if (!e.complete || !rule) continue;
      p.total = e.total;
      p.finished.push_back({e.index, e.id, e.outcome, e.message, *rule});
      p.started.reset();
    }
  }
  return p;
}

double CaseWatch::seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void CaseWatch::read_new_lines() {
  std::ifstream in(path_);
  if (!in) return;
  in.seekg(offset_);
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  offset_ += static_cast<std::streamoff>(chunk.size());
  pending_ += chunk;
  for (size_t nl; (nl = pending_.find('\n')) != std::string::npos;) {
    const std::string line = pending_.substr(0, nl);
    pending_.erase(0, nl + 1);
    const ProgressEvent e = parse_progress_line(line);
    if (e.kind == "start") {
      current_ = e.id;
      started_ = std::chrono::steady_clock::now();
    } else if (e.kind == "end" || e.kind == "done") {
      if (!current_.empty()) slowest_s_ = std::max(slowest_s_, seconds_since(started_));
      current_.clear();
    }
  }
}

std::optional<std::string> CaseWatch::operator()() {
  read_new_lines();
  if (current_.empty()) return std::nullopt;
  const double ran = seconds_since(started_);
  const double bound = std::min(std::max(floor_s_, 20 * slowest_s_), std::max(floor_s_, 600.0));
  if (ran <= bound) return std::nullopt;
  char text[160];
  std::snprintf(text, sizeof text,
                "case %s ran for %.0f s; a case may run %.0f s (max(--case-timeout %.0f s, ",
                current_.c_str(), ran, bound, floor_s_);
  char tail[96];
  std::snprintf(tail, sizeof tail, "20 x the slowest case so far, %.3g s), at most %.0f s)",
                slowest_s_, std::max(floor_s_, 600.0));
  return std::string(text) + tail;
}

}  // namespace kgate::cli
