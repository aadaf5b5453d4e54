// report.html: one self-contained HTML5 page for a RunReport, to open from a CI artifact or a local
// --out directory. Self-contained means inline CSS and inline SVG only: no script, no external
// stylesheet, font, image or link, so it renders the same offline and inside sandboxed artifact
// viewers. Every piece of text taken from the report is HTML-escaped.
#pragma once

#include <string>

#include "core/report.hpp"

namespace kgate {

/// The whole document, from "<!DOCTYPE html>" to "</html>\n": the overall outcome (worded as in
/// summary.md), the run metadata, one summary row per kernel, then per kernel its correctness (a
/// worst-margin bar against the tolerance and the fragility threshold, the minimal failing case with
/// its repro command, the failures as found, warnings) and every speed comparison with a box plot
/// of its raw per-launch samples in µs. Non-finite numbers print as "-". Deterministic: the same
/// report gives the same bytes.
std::string render_html(const RunReport& report);

}  // namespace kgate
