// Short texts of a kernel's report shared by the terminal table, the Markdown summary and the
// HTML page, so that one figure reads the same everywhere.
#pragma once

#include <string>

#include "core/report.hpp"

namespace kgate {

/// The correctness cell: "passed 64/64" (every case passed), "failed 8 of 64" (8 cases failed),
/// "failed, no case ran" / "failed after 40/64" (a crash, hang or fault outside the cases: the
/// kernel's message says which), "skipped", or "invalid 60/64" (the reference failed on the others).
std::string correctness_cell(const KernelReport& k);

/// A time ratio (the kernel's time / the baseline's; below 1 is faster) in words, the one way every
/// output states speed: "1.099x faster", "1.860x slower", "same speed" within 0.05%; "-" when it is
/// not a positive number. report.json keeps the ratio itself (SpeedComparison::ratio).
std::string speed_words(double ratio);

/// A speedup (the baseline's time / the kernel's; above 1 is faster, as workload speedups are) in
/// the same words: speedup_words(1.15) == speed_words(1 / 1.15) == "1.150x faster".
std::string speedup_words(double speedup);

}  // namespace kgate
