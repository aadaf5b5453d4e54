// What `kgate calibrate` measured, as its writers read it (report/writers.hpp lists them): per
// kernel and speed case, each A/A comparison (the kernel timed against itself) with its noise, and
// the A/A summaries made of them (gates/speed/calibration). Host-only.
#pragma once

#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/case.hpp"
#include "core/report.hpp"
#include "gates/speed/calibration.hpp"

namespace kgate {

/// Launch-to-launch noise and the spread of the block statistic of one comparison, from its raw
/// samples.
struct SampleNoise {
  double cv = std::numeric_limits<double>::quiet_NaN();        ///< median within-block CV
  double block_sd = std::numeric_limits<double>::quiet_NaN();  ///< sd of the block log ratios
};

/// One A/A comparison with what calibrate.json keeps of it.
struct AaRun {
  SpeedComparison comparison;  ///< its raw samples may be left out (a worker's, read back)
  SampleNoise noise;
  int64_t checked_launches = 0;  ///< the comparison's checked launches (checked timing)
  double seconds = 0;
};

/// A timed case and its runs.
struct CaseRuns {
  Case kcase;
  std::vector<AaRun> runs;
};

/// One kernel's calibration so far.
struct CalibratedKernel {
  std::string name, op, backend;
  std::vector<CaseRuns> cases;
  std::string error;        ///< why its worker stopped early ("" when it did not)
  bool summarized = false;  ///< finished: its pooled summary is written
};

/// A calibration: the run's metadata ("meta" of calibrate.json, as cli::run_meta makes it, with
/// "config" and "seconds") and its kernels so far.
struct CalibrationReport {
  nlohmann::ordered_json meta = nlohmann::ordered_json::object();
  std::vector<CalibratedKernel> kernels;
};

/// calibrate.json: "schema": "kgate-calibrate/1", the meta, and per kernel its speed cases (each
/// with its summary and its comparisons), the error and, once finished, the pooled summary.
void write_calibration_json(std::ostream& os, const CalibrationReport& calibration);

/// The console's report: the settings, a row per kernel and speed case (and per kernel over its
/// cases), the false-positive rate over every comparison with its interval, the noise floor, and
/// whether the configured delta is supported (from meta: device, backend, config's delta, alpha,
/// flush_l2 and comparisons).
void write_calibration_console(std::ostream& os, const CalibrationReport& calibration);

/// "f32 B=4096,N=1024": a case's dtype and shape, short enough for a table column.
std::string short_case(const Case& c);

/// One kernel as calibrate.json writes it.
nlohmann::ordered_json calibrated_kernel_json(const CalibratedKernel& kernel);

/// The A/A summary of some runs (false-positive rate, noise floor, smallest supported delta).
speed::AaSummary summarize_runs(const std::vector<const AaRun*>& runs);

/// The median of a field over the runs where it is finite (NaN when none is).
double median_of(const std::vector<const AaRun*>& runs, double (*field)(const AaRun&));

}  // namespace kgate
