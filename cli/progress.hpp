// The worker progress protocol of kgate check. A worker appends one line per event to its
// progress file, and its parent reads it while the worker runs (the per-case watchdog) and after
// it ends (which cases finished, and which one it was running when it crashed or hung):
//   start INDEX TOTAL CASE_ID                        before a correctness case runs
//   end INDEX TOTAL CASE_ID OUTCOME RULE MESSAGE     after it (MESSAGE on one line)
//   done TOTAL                                       after the last case (the behaviour checks
//                                                    and the timing follow)
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <ios>
#include <optional>
#include <string>
#include <vector>

#include "core/case.hpp"
#include "core/report.hpp"

namespace kgate::cli {
namespace fs = std::filesystem;

/// A message on one line (the progress file holds one case per line), at most 2000 characters.
std::string one_line(std::string text);

/// The writer: the line for case `index` of `total` before it runs (result null), after it (its
/// result), or "done" once index reaches total.
std::string progress_line(size_t index, size_t total, const Case& c, const CaseResult* result);

// What a worker noted of its correctness cases (its progress file): the cases it finished, the
// one it started and did not finish, and whether it got to the end of the list.
struct WorkerProgress {
  struct Finished {
    int64_t index = 0;
    std::string id, outcome, message;
    Reason rule = Reason::none;
  };
  std::vector<Finished> finished;
  std::optional<int64_t> started;  // index of a case begun and never finished
  std::string started_id;
  int64_t total = 0;
  bool done = false;
};
/// The reader: the whole file as the worker left it.
WorkerProgress read_progress(const fs::path& path);

// The per-case watchdog: follows a worker's progress file while it runs, and calls a correctness
// case hung once it has run for max(floor, 20 x the slowest case so far), at most max(floor, 600
// s). Cases after the list (behaviour checks, timing) are bounded by --kernel-timeout alone.
class CaseWatch {
 public:
  CaseWatch(fs::path progress, double floor_s) : path_(std::move(progress)), floor_s_(floor_s) {}

  /// Why the case now running counts as hung, or nullopt while it may run on.
  std::optional<std::string> operator()();

 private:
  static double seconds_since(std::chrono::steady_clock::time_point t);
  void read_new_lines();

  fs::path path_;
  double floor_s_;
  std::streamoff offset_ = 0;
  std::string pending_, current_;
  std::chrono::steady_clock::time_point started_;
  double slowest_s_ = 0;
};

}  // namespace kgate::cli
