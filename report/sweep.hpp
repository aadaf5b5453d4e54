// What `kgate sweep` found, as its writers read it (report/writers.hpp lists them): per kernel and
// dtype, the sensitivity summary (gates/sensitivity), the configured tolerance it was judged
// against and its closest case. Host-only.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gates/sensitivity/sweep.hpp"

namespace kgate {

/// A dtype's sweep, the configured tolerance it was judged against and its closest case.
struct SweptDtype {
  sensitivity::DtypeSweep sweep;
  double atol = 0, rtol = 0;
  std::string worst_case;  ///< the case id with the largest margin (or the first hard failure)
  std::string worst_repro;
  std::string worst_message;
  double worst_margin = -1;
  /// Of the failing cases, those that fail an elementwise rule while the kernel is as accurate as
  /// eager against the float64 oracle (correctness::as_accurate_as_eager): a tolerance too tight.
  int64_t as_accurate_as_eager = 0;
};

/// One kernel's (or package's) sweep.
struct SweptKernel {
  std::string name, op, backend, source;
  int64_t fallback = 0;  ///< cases that fell back to the reference (left out of the figures)
  double fragile_margin = 0.8;
  std::vector<SweptDtype> dtypes;
};

/// A sweep: the run's metadata ("meta" of sweep.json, as cli::run_meta makes it, with "seconds"),
/// the grid it evaluated and its kernels so far.
struct SweepReport {
  nlohmann::ordered_json meta = nlohmann::ordered_json::object();
  sensitivity::SweepGrid grid;
  std::vector<SweptKernel> kernels;
};

/// sweep.json: "schema": "kgate-sweep/1", the meta, and per kernel and dtype every figure.
void write_sweep_json(std::ostream& os, const SweepReport& sweep);
/// sweep.md: the table of every kernel and dtype, then per dtype the error quantiles, the closest
/// case, the pass-rate grid with its frontier and the pass rate at multiples of the tolerance.
void write_sweep_markdown(std::ostream& os, const SweepReport& sweep);
/// sweep.html: the same table and the tolerance curves as inline SVG (no script, no URL).
void write_sweep_html(std::ostream& os, const SweepReport& sweep);
/// The console's table: a row per kernel and dtype, then a line per FRAGILE or FAILED one.
void write_sweep_console(std::ostream& os, const SweepReport& sweep);

/// What a dtype whose failing cases are as accurate as eager says (one sentence; "" when none is):
/// how many, and, with `fix`, the likely cause and its fix (else the cause and the docs' section:
/// the console's shorter line, under the worst case's message).
std::string as_accurate_as_eager_words(const SweptDtype& d, bool fix = true);

}  // namespace kgate
