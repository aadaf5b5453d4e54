// Report writer: report.html, one self-contained HTML5 page (inline CSS and SVG; no script, no
// URL).
#include "report/writers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>
#include <vector>

#include "core/format.hpp"
#include "report/text.hpp"

namespace kgate {
namespace {

// The fragility threshold marked on the margin bar: kgate check's default (kDefaultFragileMargin in
// runtime/pipeline.hpp, which core cannot include). The report does not record a per-run
// --fragile-margin, and the FRAGILE warning itself (in the warnings list) names the threshold it
// used.
constexpr double kFragileMarker = 0.8;
constexpr double kMarginScale =
    1.2;  // the margin bar's full width: room to show a failure past 1.0
// Dots per arm of a sample plot: past a few hundred they merge into a band and only grow the page
// (a comparison can hold tens of thousands of launches).
constexpr size_t kMaxDots = 400;

// Text from the report goes into element content and attribute values alike: markup_escape covers
// both.
std::string esc(const std::string& s) { return markup_escape(s); }

// Escaped, or "-" for an empty field (an empty cell reads as a rendering fault).
std::string esc_or_dash(const std::string& s) { return s.empty() ? "-" : esc(s); }

std::string ratio_text(double r) { return speed_words(r); }

std::string micros(double ns) {
  return std::isfinite(ns) ? format_number_or_dash(ns / 1e3, "%.4g") + "&nbsp;&micro;s" : "-";
}

// SVG coordinates: one decimal is below a pixel, and fixed formatting keeps the output
// deterministic.
std::string px(double v) { return format_number_or_dash(std::isfinite(v) ? v : 0.0, "%.1f"); }

// Outcome names double as CSS classes (a fixed set of lowercase words, nothing from the report).
std::string badge(Outcome o) {
  const std::string name = outcome_name(o);
  return "<span class=\"badge " + name + "\">" + name + "</span>";
}

// A label cut to `max_bytes` without splitting a UTF-8 sequence (SVG text does not wrap).
std::string shorten(const std::string& s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "...";
}

/// The comparison summary.md shows for a kernel: the slowest against eager (against anything when
/// none is against eager); null when the kernel has no comparisons.
const SpeedComparison* worst_vs_eager(const KernelReport& k) {
  std::vector<const SpeedComparison*> eager;
  for (const auto& s : k.speed)
    if (s.baseline == "eager") eager.push_back(&s);
  if (eager.empty())
    for (const auto& s : k.speed) eager.push_back(&s);
  const SpeedComparison* worst = nullptr;
  for (const auto* s : eager)
    if (!worst || s->ratio > worst->ratio) worst = s;
  return worst;
}

// Linear interpolation between order statistics (the usual "type 7" quantile) of a sorted,
// non-empty vector.
double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto i = static_cast<size_t>(std::floor(pos));
  if (i + 1 >= sorted.size()) return sorted.back();
  return sorted[i] + (pos - static_cast<double>(i)) * (sorted[i + 1] - sorted[i]);
}

// A tick step of 1, 2 or 5 times a power of ten giving about `target` intervals over `range` (> 0).
double nice_step(double range, int target) {
  const double raw = range / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / mag;
  return (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
}

// Deterministic vertical jitter in [-0.5, 0.5) for dot i, so that equal times do not all land on
// one pixel; a multiplicative hash rather than a random generator keeps the page byte-identical per
// report.
double jitter(size_t i) {
  const uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
  return static_cast<double>((h >> 16) & 1023u) / 1024.0 - 0.5;
}

/// Two box-and-whisker strips (baseline above, candidate below) on one time axis in µs, with the
/// per-launch samples as dots; "no samples" instead when neither arm has a finite sample.
void write_sample_plot(std::ostream& os, const SpeedComparison& s) {
  struct Arm {
    std::string name;
    const char* css;
    const std::vector<double>* ns;
    std::vector<double> sorted_us;  // finite samples only
  };
  Arm arms[2] = {{s.baseline.empty() ? "baseline" : s.baseline, "arm-base", &s.baseline_ns, {}},
                 {"candidate", "arm-cand", &s.candidate_ns, {}}};
  double lo = INFINITY, hi = -INFINITY;
  size_t non_finite = 0;
  for (auto& a : arms) {
    for (double v : *a.ns) {
      if (std::isfinite(v)) a.sorted_us.push_back(v / 1e3);
      else ++non_finite;
    }
    std::sort(a.sorted_us.begin(), a.sorted_us.end());
    if (!a.sorted_us.empty()) {
      lo = std::min(lo, a.sorted_us.front());
      hi = std::max(hi, a.sorted_us.back());
    }
  }
  if (!(lo <= hi)) {
    os << "<p class=\"note\">no samples";
    if (non_finite > 0) os << " (" << non_finite << " non-finite values only)";
    os << "</p>\n";
    return;
  }
  if (hi - lo <= 0) {  // every sample equal: widen so the axis has a span and ticks
    const double pad = std::max(std::fabs(lo) * 0.05, 1e-3);
    lo -= pad;
    hi += pad;
  }
  const double step = nice_step(hi - lo, 6);
  const double axis_lo = std::floor(lo / step) * step, axis_hi = std::ceil(hi / step) * step;
  if (!std::isfinite(step) || !(step > 0) || !std::isfinite(axis_hi - axis_lo) ||
      !(axis_hi > axis_lo)) {
    os << "<p class=\"note\">samples out of plottable range</p>\n";
    return;
  }

  constexpr double kWidth = 760, kLeft = 130, kRight = 24, kTop = 10, kBand = 40, kAxis = 40;
  constexpr double kHeight = kTop + 2 * kBand + kAxis;
  const double plot_w = kWidth - kLeft - kRight, axis_y = kTop + 2 * kBand;
  const auto sx = [&](double us) { return kLeft + (us - axis_lo) / (axis_hi - axis_lo) * plot_w; };

  os << "<svg class=\"samples\" viewBox=\"0 0 " << px(kWidth) << " " << px(kHeight) << "\" width=\""
     << px(kWidth) << "\" height=\"" << px(kHeight)
     << "\" role=\"img\" aria-label=\"per-launch times of " << esc(arms[0].name)
     << " and candidate, in microseconds\">\n";

  // Ticks and grid first, so the data is drawn over them.
  const auto ticks = static_cast<int>(std::lround((axis_hi - axis_lo) / step));
  const int decimals = std::clamp(static_cast<int>(-std::floor(std::log10(step) + 1e-9)), 0, 9);
  for (int i = 0; i <= ticks; ++i) {
    double t = axis_lo + i * step;
    if (std::fabs(t) < step * 1e-9) t = 0;  // no "-0.00"
    char label[64];
    std::snprintf(label, sizeof label, "%.*f", decimals, t);
    const std::string x = px(sx(t));
    os << "<line class=\"grid\" x1=\"" << x << "\" y1=\"" << px(kTop) << "\" x2=\"" << x
       << "\" y2=\"" << px(axis_y) << "\"/><line class=\"axis\" x1=\"" << x << "\" y1=\""
       << px(axis_y) << "\" x2=\"" << x << "\" y2=\"" << px(axis_y + 5)
       << "\"/><text class=\"tick\" x=\"" << x << "\" y=\"" << px(axis_y + 17) << "\">" << label
       << "</text>\n";
  }
  os << "<line class=\"axis\" x1=\"" << px(kLeft) << "\" y1=\"" << px(axis_y) << "\" x2=\""
     << px(kLeft + plot_w) << "\" y2=\"" << px(axis_y) << "\"/>\n";
  os << "<text class=\"caption\" x=\"" << px(kLeft + plot_w / 2) << "\" y=\"" << px(axis_y + 33)
     << "\">time per launch (&micro;s)</text>\n";

  size_t shown_every = 1;
  for (size_t a = 0; a < 2; ++a) {
    const Arm& arm = arms[a];
    const double cy = kTop + kBand * (static_cast<double>(a) + 0.5);
    os << "<g class=\"" << arm.css << "\">\n";
    const auto& v = arm.sorted_us;
    double q0 = 0, q1 = 0, q2 = 0, q3 = 0, q4 = 0;
    if (!v.empty()) {
      q0 = v.front();
      q1 = quantile(v, 0.25);
      q2 = quantile(v, 0.5);
      q3 = quantile(v, 0.75);
      q4 = v.back();
      // First child of the group: the browser's tooltip over the strip gives the five numbers.
      os << "<title>" << esc(arm.name) << ": n=" << v.size() << ", min "
         << format_number_or_dash(q0, "%.4g") << ", q1 " << format_number_or_dash(q1, "%.4g")
         << ", median " << format_number_or_dash(q2, "%.4g") << ", q3 "
         << format_number_or_dash(q3, "%.4g") << ", max " << format_number_or_dash(q4, "%.4g")
         << " &micro;s</title>\n";
    }
    os << "<text class=\"label\" x=\"" << px(kLeft - 8) << "\" y=\"" << px(cy - 2) << "\">"
       << esc(shorten(arm.name, 20)) << "</text><text class=\"label n\" x=\"" << px(kLeft - 8)
       << "\" y=\"" << px(cy + 11) << "\">n=" << v.size() << "</text>\n";
    if (v.empty()) {
      os << "<text class=\"empty\" x=\"" << px(kLeft + 6) << "\" y=\"" << px(cy + 4)
         << "\">no samples</text>\n</g>\n";
      continue;
    }
    // Whiskers to min and max with end caps, then the box (quartiles) and the median.
    os << "<line class=\"whisker\" x1=\"" << px(sx(q0)) << "\" y1=\"" << px(cy) << "\" x2=\""
       << px(sx(q1)) << "\" y2=\"" << px(cy) << "\"/><line class=\"whisker\" x1=\"" << px(sx(q3))
       << "\" y1=\"" << px(cy) << "\" x2=\"" << px(sx(q4)) << "\" y2=\"" << px(cy) << "\"/>\n";
    for (double q : {q0, q4})
      os << "<line class=\"whisker\" x1=\"" << px(sx(q)) << "\" y1=\"" << px(cy - 6) << "\" x2=\""
         << px(sx(q)) << "\" y2=\"" << px(cy + 6) << "\"/>";
    os << "\n<rect class=\"box\" x=\"" << px(sx(q1)) << "\" y=\"" << px(cy - 10) << "\" width=\""
       << px(std::max(sx(q3) - sx(q1), 1.0)) << "\" height=\"20\"/>";
    os << "<line class=\"median\" x1=\"" << px(sx(q2)) << "\" y1=\"" << px(cy - 10) << "\" x2=\""
       << px(sx(q2)) << "\" y2=\"" << px(cy + 10) << "\"/>\n";
    // Every k-th launch in launch order: deterministic, and it keeps drift over the run visible.
    const size_t every = (arm.ns->size() + kMaxDots - 1) / kMaxDots;
    shown_every = std::max(shown_every, every);
    size_t drawn = 0;
    for (size_t i = 0; i < arm.ns->size(); i += every) {
      const double t = (*arm.ns)[i];
      if (!std::isfinite(t)) continue;
      os << (drawn++ % 8 == 0 ? "\n" : "") << "<circle cx=\"" << px(sx(t / 1e3)) << "\" cy=\""
         << px(cy + jitter(i) * 26) << "\" r=\"1.6\"/>";
    }
    os << "\n</g>\n";
  }
  os << "</svg>\n";
  os << "<p class=\"note\">Each dot is one launch";
  if (shown_every > 1) os << " (one in every " << shown_every << " shown)";
  os << "; box: quartiles and median; whiskers: min and max";
  if (non_finite > 0) os << "; " << non_finite << " non-finite samples left out";
  os << ".</p>\n";
}

/// The worst correctness margin on a 0..1.2 bar, with markers at the tolerance (1.0) and the
/// fragility threshold (0.8). A margin past the scale (Inf for memory failures) fills the bar. The
/// bar of a kernel that failed is red whatever its margin (a crash or a memory failure can leave a
/// small one).
void write_margin_bar(std::ostream& os, double margin, bool failed) {
  constexpr double kWidth = 320, kLeft = 10, kPlot = 300, kHeight = 44;
  const auto sx = [&](double m) {
    return kLeft + std::clamp(m, 0.0, kMarginScale) / kMarginScale * kPlot;
  };
  const bool known = !std::isnan(margin);
  const char* css = !known                    ? "skipped"
                    : failed || margin > 1    ? "failed"
                    : margin > kFragileMarker ? "fragile"
                                              : "passed";
  os << "<div class=\"marginbar\"><svg class=\"margin\" viewBox=\"0 0 " << px(kWidth) << " "
     << px(kHeight) << "\" width=\"" << px(kWidth) << "\" height=\"" << px(kHeight)
     << "\" role=\"img\" aria-label=\"worst margin " << format_number_or_dash(margin, "%.2f")
     << "\">\n";
  os << "<rect class=\"track\" x=\"" << px(kLeft) << "\" y=\"8\" width=\"" << px(kPlot)
     << "\" height=\"12\"/>";
  if (known)
    os << "<rect class=\"bar " << css << "\" x=\"" << px(kLeft) << "\" y=\"8\" width=\""
       << px(sx(margin) - kLeft) << "\" height=\"12\"/>";
  os << "\n";
  const struct {
    double at;
    const char* css;
    const char* label;
  } marks[] = {{kFragileMarker, "mark-fragile", "0.8"}, {1.0, "mark-tol", "1.0 tol"}};
  for (const auto& m : marks)
    os << "<line class=\"" << m.css << "\" x1=\"" << px(sx(m.at)) << "\" y1=\"3\" x2=\""
       << px(sx(m.at)) << "\" y2=\"25\"/><text class=\"tick\" x=\"" << px(sx(m.at))
       << "\" y=\"38\">" << m.label << "</text>\n";
  os << "<text class=\"tick\" x=\"" << px(kLeft) << "\" y=\"38\">0</text><text class=\"tick\" x=\""
     << px(kLeft + kPlot) << "\" y=\"38\">1.2</text>\n</svg>";
  os << "<span class=\"" << css << "\">worst margin " << format_number_or_dash(margin, "%.2f");
  if (margin > kMarginScale) os << " (off the scale)";
  os << "</span> <span class=\"note\">observed / allowed error: above 1.0 fails, above 0.8 is "
        "fragile</span></div>\n";
}

void write_case_result_block(std::ostream& os, const CaseResult& r) {
  os << "<div class=\"failure\">\n<p><b>Minimal failing case</b> <code>" << esc(r.kcase.id())
     << "</code>, rule <code>" << esc_or_dash(reason_name(r.rule)) << "</code>, margin "
     << format_number_or_dash(r.margin, "%.3g") << "</p>\n";
  os << "<p class=\"msg failed\">" << esc_or_dash(r.message) << "</p>\n";
  os << "<p>repro: <code>" << esc_or_dash(r.repro) << "</code></p>\n</div>\n";
}

void write_failures_table(std::ostream& os, const CorrectnessReport& c) {
  os << "<h4>Failures as found</h4>\n";
  if (static_cast<int64_t>(c.failures.size()) < c.failed)
    os << "<p class=\"note\">the first " << c.failures.size() << " of " << c.failed
       << " are kept</p>\n";
  os << "<div "
        "class=\"wrap\"><table>\n<tr><th>case</th><th>rule</th><th>observed</th><th>allowed</"
        "th><th>margin</th>"
        "<th>message</th><th>repro</th></tr>\n";
  for (const auto& f : c.failures)
    os << "<tr><td><code>" << esc(f.kcase.id()) << "</code></td><td>"
       << esc_or_dash(reason_name(f.rule)) << "</td><td class=\"num\">"
       << format_number_or_dash(f.observed) << "</td><td class=\"num\">"
       << format_number_or_dash(f.allowed) << "</td><td class=\"num\">"
       << format_number_or_dash(f.margin) << "</td><td class=\"msg\">" << esc_or_dash(f.message)
       << "</td><td><code>" << esc_or_dash(f.repro) << "</code></td></tr>\n";
  os << "</table></div>\n";
}

void write_null_calibration(std::ostream& os, const CorrectnessReport& c) {
  if (c.null_calibration.empty()) return;
  os << "<details><summary>null-kernel calibration</summary>\n<table>\n<tr><th>null "
        "kernel</th><th>family</th>"
        "<th>cases</th><th>failed</th></tr>\n";
  for (const auto& [null_kernel, families] : c.null_calibration)
    for (const auto& [family, counts] : families) {
      // A family a null kernel passes entirely cannot catch a kernel that writes nothing useful.
      const bool weak = counts.first > 0 && counts.second == 0;
      os << "<tr" << (weak ? " class=\"fragile\"" : "") << "><td>" << esc(null_kernel)
         << "</td><td>" << esc(family) << "</td><td class=\"num\">" << counts.first
         << "</td><td class=\"num\">" << counts.second << (weak ? " (too weak)" : "")
         << "</td></tr>\n";
    }
  os << "</table></details>\n";
}

void write_speed(std::ostream& os, const KernelReport& k) {
  os << "<h3>Speed</h3>\n";
  if (k.speed.empty()) {
    os << "<p class=\"note\">no speed comparisons</p>\n";
    return;
  }
  constexpr int kColumns = 13;
  os << "<div class=\"wrap\"><table "
        "class=\"speed\">\n<tr><th>vs</th><th>case</th><th>timer</th><th>speed (time ratio)</th>"
        "<th>bounds</th><th>p</th><th>p adj.</th><th>&delta;</th><th>blocks "
        "(dropped)</th><th>baseline median</th>"
        "<th>candidate median</th><th>decision</th><th>note</th></tr>\n";
  for (const auto& s : k.speed) {
    os << "<tr class=\"cmp\"><td>" << esc_or_dash(s.baseline) << "</td><td><code>"
       << esc(case_words(s)) << "</code></td><td>" << esc_or_dash(s.timer)
       << "</td><td class=\"num ratio\">" << ratio_text(s.ratio) << "</td><td class=\"num\">["
       << format_number_or_dash(s.ratio_lower, "%.3f") << ", "
       << format_number_or_dash(s.ratio_upper, "%.3f") << "]</td><td class=\"num\">"
       << format_number_or_dash(s.p_value) << "</td><td class=\"num\">"
       << format_number_or_dash(s.p_adjusted) << "</td><td class=\"num\">"
       << (std::isfinite(s.delta) ? format_exact(s.delta) : "-") << "</td><td class=\"num\">"
       << s.blocks << " (" << s.dropped_blocks << ")</td><td class=\"num\">"
       << micros(s.baseline_median_ns) << "</td><td class=\"num\">" << micros(s.candidate_median_ns)
       << "</td><td>" << badge(s.decision) << "</td><td class=\"msg\">" << esc(s.note)
       << "</td></tr>\n";
    os << "<tr class=\"plot\"><td colspan=\"" << kColumns << "\">\n";
    write_sample_plot(os, s);
    os << "</td></tr>\n";
  }
  os << "</table></div>\n";
}

void write_kernel(std::ostream& os, const KernelReport& k, size_t index) {
  const auto& c = k.correctness;
  os << "<section class=\"kernel" << (k.outcome == Outcome::passed ? " ok" : "") << "\" id=\"k"
     << index << "\">\n<h2><code>" << esc(k.name) << "</code> " << badge(k.outcome) << "</h2>\n";
  os << "<p class=\"sub\">op <b>" << esc_or_dash(k.op) << "</b>, backend <b>"
     << esc_or_dash(k.backend) << "</b>";
  if (!k.source.empty()) os << ", source <code>" << esc(k.source) << "</code>";
  os << ", " << format_number_or_dash(k.seconds, "%.1f") << " s</p>\n";
  if (!k.message.empty() && k.outcome != Outcome::passed)
    os << "<p class=\"msg " << outcome_name(k.outcome) << "\">" << esc(k.message) << "</p>\n";

  os << "<h3>Correctness</h3>\n<p><span class=\"" << (c.failed > 0 ? "failed" : "passed") << "\">"
     << c.passed << " of " << c.cases << " cases passed, " << c.failed << " failed</span>";
  if (c.fallback > 0)
    os << "; " << c.fallback << " were outside its guard and ran the reference (fallback)";
  if (c.behaviour_checks > 0) os << "; " << c.behaviour_checks << " behaviour checks";
  os << ".</p>\n";
  write_margin_bar(os, c.worst_margin, k.outcome == Outcome::failed || c.failed > 0);
  if (c.minimal) write_case_result_block(os, *c.minimal);
  if (!c.failures.empty()) write_failures_table(os, c);
  if (!c.warnings.empty()) {
    os << "<ul class=\"warnings\">\n";
    for (const auto& w : c.warnings) os << "<li>warning: " << esc(w) << "</li>\n";
    os << "</ul>\n";
  }
  write_null_calibration(os, c);

  if (!k.baseline.empty()) {
    const SpeedComparison* worst = nullptr;
    for (const auto& s : k.speed)
      if (s.baseline == k.baseline && (!worst || s.ratio > worst->ratio)) worst = &s;
    os << "<p>Against baseline <code>" << esc(k.baseline) << "</code>";
    if (!k.baseline_source.empty()) os << " (<code>" << esc(k.baseline_source) << "</code>)";
    if (k.baseline_correctness)
      os << ": baseline correctness " << k.baseline_correctness->passed << "/"
         << k.baseline_correctness->cases;
    if (worst) os << "; worst speed " << ratio_text(worst->ratio) << " " << badge(worst->decision);
    os << "</p>\n";
  }
  write_speed(os, k);
  if (k.workload_variants > 0) {
    os << "<p>Workload (" << k.workload_variants << " variants, " << k.workload_calls << " calls): "
       << (k.workload_speedup_vs_eager ? speedup_words(*k.workload_speedup_vs_eager) : "-")
       << " than eager";
    if (!k.baseline.empty())
      os << ", "
         << (k.workload_speedup_vs_baseline ? speedup_words(*k.workload_speedup_vs_baseline) : "-")
         << " than " << esc(k.baseline);
    os << "</p>\n";
  }
  os << "</section>\n";
}

void write_summary_rows(std::ostream& os, const RunReport& report, const char* order,
                        const std::vector<size_t>& rows);

// How bad an outcome is, for the "failures first" order: failed first, passed last.
int severity(Outcome o) {
  switch (o) {
    case Outcome::failed:
      return 0;
    case Outcome::regressed:
      return 1;
    case Outcome::invalid:
      return 2;
    case Outcome::inconclusive:
      return 3;
    case Outcome::fragile:
      return 4;
    case Outcome::unchecked:
      return 2;
    case Outcome::skipped:
      return 5;
    case Outcome::passed:
      return 6;
    case Outcome::unchanged:
      return 6;
  }
  return 7;
}

// The summary table, once per order: run order, failures first, worst margin first, slowest first.
// The page has no script (every string in it comes from the report), so the order and the failure
// filter are radio buttons and a checkbox read by CSS (:has); a browser without :has shows the
// run order, unfiltered.
void write_summary_table(std::ostream& os, const RunReport& report) {
  if (report.kernels.empty()) {
    os << "<p class=\"note\">No kernels in this report.</p>\n";
    return;
  }
  os << "<div class=\"controls\">order: "
        "<input type=\"radio\" name=\"order\" id=\"order-run\" checked><label for=\"order-run\">as "
        "run</label> "
        "<input type=\"radio\" name=\"order\" id=\"order-outcome\"><label "
        "for=\"order-outcome\">failures first</label> "
        "<input type=\"radio\" name=\"order\" id=\"order-margin\"><label "
        "for=\"order-margin\">worst margin first</label> "
        "<input type=\"radio\" name=\"order\" id=\"order-speed\"><label "
        "for=\"order-speed\">slowest first</label> "
        "&middot; <input type=\"checkbox\" id=\"only-failing\"><label for=\"only-failing\">only "
        "kernels that did not "
        "pass</label></div>\n";
  std::vector<size_t> run(report.kernels.size());
  for (size_t i = 0; i < run.size(); ++i) run[i] = i;
  const auto& ks = report.kernels;
  const auto margin = [&](size_t i) {
    const double m = ks[i].correctness.worst_margin;
    return std::isnan(m) ? -INFINITY : m;
  };
  const auto slowness = [&](size_t i) {
    const SpeedComparison* w = worst_vs_eager(ks[i]);
    return w && std::isfinite(w->ratio) ? w->ratio : -INFINITY;
  };
  std::vector<size_t> by_outcome = run, by_margin = run, by_speed = run;
  std::stable_sort(by_outcome.begin(), by_outcome.end(), [&](size_t a, size_t b) {
    return severity(ks[a].outcome) < severity(ks[b].outcome);
  });
  std::stable_sort(by_margin.begin(), by_margin.end(),
                   [&](size_t a, size_t b) { return margin(a) > margin(b); });
  std::stable_sort(by_speed.begin(), by_speed.end(),
                   [&](size_t a, size_t b) { return slowness(a) > slowness(b); });
  const std::pair<const char*, const std::vector<size_t>*> orders[] = {
      {"order-run", &run},
      {"order-outcome", &by_outcome},
      {"order-margin", &by_margin},
      {"order-speed", &by_speed}};
  for (const auto& [order, rows] : orders) write_summary_rows(os, report, order, *rows);
}

void write_summary_rows(std::ostream& os, const RunReport& report, const char* order,
                        const std::vector<size_t>& rows) {
  os << "<div class=\"wrap\"><table class=\"summary " << order
     << "\">\n<tr><th>kernel</th><th>op</th><th>backend</th><th>outcome</th>"
        "<th>correctness</th><th>failed</th><th>worst margin</th><th>speed vs "
        "eager</th><th>case</th>"
        "<th>decision</th></tr>\n";
  for (size_t i : rows) {
    const auto& k = report.kernels[i];
    const SpeedComparison* worst = worst_vs_eager(k);
    os << "<tr class=\"kernel" << (k.outcome == Outcome::passed ? " ok" : "")
       << "\"><td><a href=\"#k" << i << "\"><code>" << esc(k.name) << "</code></a></td><td>"
       << esc_or_dash(k.op) << "</td><td>" << esc_or_dash(k.backend) << "</td><td>"
       << badge(k.outcome) << "</td><td class=\"num\">" << k.correctness.passed << "/"
       << k.correctness.cases << "</td><td class=\"num"
       << (k.correctness.failed > 0 ? " failed" : "") << "\">" << k.correctness.failed
       << "</td><td class=\"num\">" << format_number_or_dash(k.correctness.worst_margin, "%.2f")
       << "</td>";
    if (worst)
      os << "<td class=\"num ratio\">" << ratio_text(worst->ratio) << "</td><td><code>"
         << esc(case_words(*worst)) << "</code></td><td>" << badge(worst->decision) << "</td>";
    else os << "<td class=\"num ratio\">-</td><td>-</td><td>-</td>";
    os << "</tr>\n";
  }
  os << "</table></div>\n";
}

void write_meta(std::ostream& os, const RunMeta& m) {
  const std::pair<const char*, std::string> rows[] = {
      {"kgate", esc_or_dash(m.kgate_version)},
      {"commit", m.git_sha.empty() ? "-" : "<code>" + esc(m.git_sha) + "</code>"},
      {"command", m.command.empty() ? "-" : "<code>" + esc(m.command) + "</code>"},
      {"backend", esc_or_dash(m.backend)},
      {"device", esc_or_dash(m.device)},
      {"driver", esc_or_dash(m.driver)},
      {"CUDA", esc_or_dash(m.cuda)},
      {"torch", esc_or_dash(m.torch)},
      {"seed", std::to_string(m.seed)},
      {"started at", esc_or_dash(m.started_at)},
      {"seconds", format_number_or_dash(m.seconds, "%.1f")},
  };
  os << "<table class=\"meta\">\n";
  for (const auto& [label, value] : rows)
    os << "<tr><th>" << label << "</th><td>" << value << "</td></tr>\n";
  os << "</table>\n";
  // The config and clocks are nested JSON: shown as written, folded away. Invalid UTF-8 in them is
  // replaced rather than thrown on, so a stray byte never costs the whole page.
  const std::pair<const char*, const nlohmann::json*> folded[] = {{"config", &m.config},
                                                                  {"clocks", &m.clocks}};
  for (const auto& [label, j] : folded)
    if (!j->is_null() && !j->empty())
      os << "<details><summary>" << label << "</summary><pre>"
         << esc(j->dump(2, ' ', false, nlohmann::json::error_handler_t::replace))
         << "</pre></details>\n";
}

// Counts per outcome, in the enum's order, as "2 passed, 1 failed".
std::string outcome_counts(const std::map<Outcome, int>& counts) {
  std::string out;
  for (const auto& [o, n] : counts) {
    if (!out.empty()) out += ", ";
    out += "<span class=\"" + std::string(outcome_name(o)) + "\">" + std::to_string(n) + " " +
           outcome_name(o) + "</span>";
  }
  return out;
}

void write_google_benchmark(std::ostream& os, const std::vector<GoogleBenchmarkOutput>& outputs) {
  if (outputs.empty()) return;
  os << "<section class=\"gbench\">\n<h2>Google Benchmark</h2>\n<p class=\"note\">Kept in "
        "report.json as written; "
        "no gate decision reads them (summary.md has one row per benchmark).</p>\n<ul>\n";
  for (const auto& g : outputs)
    os << "<li><code>" << esc(g.file)
       << "</code>: " << (g.benchmarks.is_array() ? g.benchmarks.size() : 0) << " entries</li>\n";
  os << "</ul>\n</section>\n";
}

constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:#1f2328;
  background:#fff;max-width:1280px;margin:20px auto;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:18px;margin:28px 0 6px;padding-top:14px;border-top:2px solid #d0d7de}
h3{font-size:15px;margin:16px 0 6px}
h4{font-size:14px;margin:12px 0 4px}
table{border-collapse:collapse;margin:6px 0 12px}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.plot>td{background:#fcfcfd}
code,pre{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace}
code{background:#f6f8fa;padding:1px 4px;border-radius:3px;overflow-wrap:anywhere}
pre{background:#f6f8fa;padding:8px;white-space:pre-wrap;overflow-wrap:anywhere}
a{color:inherit}
.wrap{overflow-x:auto}
.sub,.note{color:#57606a}
.note{font-size:12px}
.msg{white-space:pre-wrap}
.failure{border-left:4px solid #cf222e;padding:2px 10px;margin:8px 0;background:#fff8f8}
.failure p{margin:4px 0}
ul.warnings{padding-left:20px}
ul.warnings li{color:#9a6700;white-space:pre-wrap}
.passed{color:#1a7f37}
.failed,.regressed,.invalid{color:#cf222e}
.inconclusive,.fragile{color:#9a6700}
.skipped{color:#57606a}
.badge{font-weight:600;border-radius:10px;padding:0 8px;font-size:12px;border:1px solid currentColor}
h1.passed,h1.failed,h1.regressed,h1.inconclusive{border-left:6px solid currentColor;padding-left:10px}
.marginbar{display:flex;align-items:center;gap:12px;flex-wrap:wrap}
svg{display:block;overflow:visible;max-width:100%;height:auto}
svg text{font:11px system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;fill:#57606a}
svg text.tick,svg text.caption{text-anchor:middle}
svg text.label{text-anchor:end;fill:#1f2328}
svg text.label.n,svg text.empty{fill:#8c959f}
svg .grid{stroke:#eaeef2}
svg .axis{stroke:#8c959f}
svg .whisker{stroke:#57606a;stroke-width:1.2}
svg .box{fill-opacity:.18;stroke-width:1.2}
svg .median{stroke:#1f2328;stroke-width:2.5}
svg .arm-base .box{fill:#0969da;stroke:#0969da}
svg .arm-base circle{fill:#0969da;fill-opacity:.35}
svg .arm-cand .box{fill:#bc4c00;stroke:#bc4c00}
svg .arm-cand circle{fill:#bc4c00;fill-opacity:.35}
svg .track{fill:#eaeef2}
svg .bar.passed{fill:#2da44e}
svg .bar.fragile{fill:#d4a72c}
svg .bar.failed{fill:#cf222e}
svg .mark-tol{stroke:#cf222e;stroke-width:2}
svg .mark-fragile{stroke:#9a6700;stroke-width:2;stroke-dasharray:3 2}
.controls{margin:6px 0;font-size:13px}
.controls label{margin-right:10px}
table.summary:not(.order-run){display:none}
body:has(#order-outcome:checked) table.order-run,body:has(#order-margin:checked) table.order-run,
body:has(#order-speed:checked) table.order-run{display:none}
body:has(#order-outcome:checked) table.order-outcome,body:has(#order-margin:checked) table.order-margin,
body:has(#order-speed:checked) table.order-speed{display:table}
body:has(#only-failing:checked) tr.kernel.ok,body:has(#only-failing:checked) section.kernel.ok{display:none}
)";

}  // namespace

std::string render_html(const RunReport& report) {
  const auto code = report.exit_code(false);
  // The headline is summary.md's, word for word, so the two reports of one run never disagree.
  const std::string headline =
      code == ExitCode::ok
          ? "kgate: all gates passed"
          : "kgate: gate failed (exit " + std::to_string(static_cast<int>(code)) + ")";
  const char* headline_css = code == ExitCode::ok           ? "passed"
                             : code == ExitCode::regression ? "regressed"
                                                            : "failed";
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>"
     << headline << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n";
  os << "<h1 class=\"" << headline_css << "\">" << headline << "</h1>\n";

  const auto& m = report.meta;
  os << "<p class=\"sub\">Device <code>" << esc_or_dash(m.device) << "</code>, backend <code>"
     << esc_or_dash(m.backend) << "</code>, seed <code>" << m.seed << "</code>";
  if (!m.git_sha.empty()) os << ", commit <code>" << esc(m.git_sha.substr(0, 12)) << "</code>";
  os << ".</p>\n";
  std::map<Outcome, int> kernel_counts, speed_counts;
  for (const auto& k : report.kernels) {
    ++kernel_counts[k.outcome];
    for (const auto& s : k.speed) ++speed_counts[s.decision];
  }
  os << "<p>" << report.kernels.size() << " kernel(s)";
  if (!kernel_counts.empty()) os << ": " << outcome_counts(kernel_counts);
  if (!speed_counts.empty()) {
    size_t n = 0;
    for (const auto& [o, c] : speed_counts) n += static_cast<size_t>(c);
    os << "; " << n << " speed comparison(s): " << outcome_counts(speed_counts);
  }
  os << ".";
  // Inconclusive timing passes by default; say so, since the headline alone would hide it.
  if (code == ExitCode::ok && report.exit_code(true) == ExitCode::inconclusive)
    os << " <span class=\"inconclusive\">Inconclusive or invalid timing: exit 3 under "
          "--inconclusive-fails.</span>";
  os << "</p>\n";

  os << "<h2>Run</h2>\n";
  write_meta(os, m);
  os << "<h2>Kernels</h2>\n";
  write_summary_table(os, report);
  for (size_t i = 0; i < report.kernels.size(); ++i) write_kernel(os, report.kernels[i], i);
  write_google_benchmark(os, report.google_benchmark);
  os << "</body>\n</html>\n";
  return os.str();
}

}  // namespace kgate
