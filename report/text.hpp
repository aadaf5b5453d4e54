// The texts every writer of a run's report shares (the console table, summary.md, junit.xml, the
// annotations, report.html), so that one figure reads the same everywhere.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "core/report.hpp"

namespace kgate {

/// The correctness cell: "passed 64/64" (every case passed), "failed 8 of 64" (8 cases failed),
/// "failed, no case ran" / "failed after 40/64" (a crash, hang or fault outside the cases: the
/// kernel's message says which), "skipped", or "invalid 60/64" (the reference failed on the
/// others).
std::string correctness_cell(const KernelReport& k);

/// A time ratio (the kernel's time / the baseline's; below 1 is faster) in words, the one way every
/// output states speed: "1.099x faster", "1.860x slower", "same speed" within 0.05%; "-" when it is
/// not a positive number. report.json keeps the ratio itself (SpeedComparison::ratio).
std::string speed_words(double ratio);

/// A speedup (the baseline's time / the kernel's; above 1 is faster, as workload speedups are) in
/// the same words: speedup_words(1.15) == speed_words(1 / 1.15) == "1.150x faster".
std::string speedup_words(double speedup);

/// One comparison in words: "1.046x slower than eager (time ratio 1.046 [1.036, 1.056]), 30
/// blocks, regressed"; for one not timed, its outcome and note.
std::string speed_summary(const SpeedComparison& s);

/// A speed comparison's case id, or "(every case)" for one that names none (an UNCHANGED kernel is
/// not timed on any case).
std::string case_words(const SpeedComparison& s);

/// The base a paired run was against, as a user names it: its ref ("main"), else its commit (12
/// digits), else "base"; "" when the run has no base.
std::string base_name(const RunReport& report);

/// A comparison's baseline as every writer names it: "eager", a baseline package or kernel by its
/// name, and the base build's copy of a kernel as NAME@BASE ("rms_norm_rows@main").
std::string baseline_label(const KernelReport& k, const std::string& baseline,
                           const std::string& base);

/// A kernel's verdict against its base, first on its console row: "REGRESSED x1.074 vs
/// rms_norm_rows@main" (the worst timed comparison), "UNCHANGED", "INVALID (the base fails its
/// cases)", "new (no base)"; "-" for a kernel without a base.
std::string base_cell(const KernelReport& k, const std::string& base);

/// A kernel's comparisons, those against its base (or a baseline package) first, then eager's, each
/// group in report order: the order the console and junit.xml list them in.
std::vector<const SpeedComparison*> base_first(const KernelReport& k);

/// The comparisons against eager (all of them when none is against eager).
std::vector<const SpeedComparison*> eager_comparisons(const KernelReport& k);

/// Text for XML and HTML: & < > " ' escaped, control characters but newline and tab as spaces.
std::string markup_escape(const std::string& s);

/// A GitHub workflow command's message: %, CR and LF escaped.
std::string annotation_escape(const std::string& s);

/// Whether an outcome fails the gate under some policy (failed, regressed, invalid).
bool is_failure(Outcome o);

/// The run's policy (meta.config.inconclusive_fails, from --inconclusive-fails): whether an
/// inconclusive or INVALID speed decision fails the gate (exit 3). JUnit, the summary and the
/// annotations follow it, as the exit code does.
bool inconclusive_fails(const RunReport& report);

/// Rows printed as aligned columns: each column as wide as its widest cell (the last one unpadded),
/// so long kernel and op names never push the next column out of line.
std::vector<size_t> column_widths(const std::vector<std::vector<std::string>>& rows);
std::string aligned_row(const std::vector<std::string>& row, const std::vector<size_t>& widths);

/// printf to a stream (the console tables' fixed-width columns).
__attribute__((format(printf, 2, 3))) void printf_to(std::ostream& os, const char* format, ...);

/// Said wherever an INVALID or inconclusive result does not fail the gate.
extern const char* const kNotFailing;

}  // namespace kgate
