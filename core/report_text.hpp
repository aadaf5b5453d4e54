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

}  // namespace kgate
