// kgate sweep's writers (report/sweep.hpp): sweep.json, sweep.md, sweep.html and the console table,
// from a SweepReport.
#include "report/sweep.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>
#include <utility>

#include "core/dtype.hpp"
#include "core/format.hpp"
#include "gates/correctness/rules.hpp"
#include "report/text.hpp"

namespace kgate {
using nlohmann::ordered_json;

namespace {

std::string g(double v) { return std::isinf(v) ? "inf" : format_number_or_dash(v); }

/// A setting (a configured tolerance, the fragility threshold) as it reads back: 1.2345e-05, not
/// g's 1.23e-05.
std::string exact(double v) { return std::isfinite(v) ? format_exact(v) : g(v); }

/// A JSON number; null for a non-finite value (an unbounded limit, nothing measured).
ordered_json json_number(double v) { return std::isfinite(v) ? ordered_json(v) : ordered_json(); }

ordered_json quantiles_json(const sensitivity::Quantiles& q) {
  return {{"p50", json_number(q.p50)},
          {"p90", json_number(q.p90)},
          {"p99", json_number(q.p99)},
          {"max", json_number(q.max)}};
}

ordered_json kernel_json(const SweptKernel& k, const sensitivity::SweepGrid& grid) {
  ordered_json dtypes = ordered_json::array();
  for (const auto& d : k.dtypes) {
    const auto& s = d.sweep;
    ordered_json frontier = ordered_json::array();
    for (size_t r = 0; r < grid.rtols.size(); ++r)
      frontier.push_back({{"rtol", grid.rtols[r]}, {"atol", json_number(s.frontier_atol[r])}});
    ordered_json scales = ordered_json::array();
    for (size_t i = 0; i < grid.scales.size(); ++i)
      scales.push_back({{"scale", grid.scales[i]}, {"pass_rate", s.scale_pass_rate[i]}});
    dtypes.push_back(
        {{"dtype", dtype_name(s.dtype)},
         {"rule", s.rule},
         {"atol", d.atol},
         {"rtol", d.rtol},
         {"cases", s.cases},
         {"failed", s.failed},
         {"hard_failures", s.hard_failures},
         {"failed_as_accurate_as_eager", d.as_accurate_as_eager},
         {"worst_margin", json_number(s.worst_margin)},
         {"verdict", s.verdict},
         {"worst_case",
          {{"case", d.worst_case}, {"repro", d.worst_repro}, {"message", d.worst_message}}},
         {"max_abs", quantiles_json(s.max_abs)},
         {"max_rel", quantiles_json(s.max_rel)},
         {"margin", quantiles_json(s.margin)},
         {"pass_rate", {{"atols", grid.atols}, {"rtols", grid.rtols}, {"rate", s.pass_rate}}},
         {"frontier", frontier},
         {"scales", scales}});
  }
  return {{"name", k.name},         {"op", k.op},
          {"backend", k.backend},   {"source", k.source},
          {"fallback", k.fallback}, {"fragile_margin", k.fragile_margin},
          {"dtypes", dtypes}};
}

std::string markdown(const std::vector<SweptKernel>& kernels, const sensitivity::SweepGrid& grid) {
  std::ostringstream md;
  md << "# kgate sweep\n\n"
     << "Margin = worst observed error / allowed error under the configured rule (<= 1 passes). "
        "Tightest passing scale = the fraction of the configured tolerance every case still passes "
        "with (the worst margin).\n\n"
     << "| kernel | dtype | rule | atol | rtol | cases | failed | worst margin | p90 margin | "
        "verdict |\n"
     << "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& k : kernels)
    for (const auto& d : k.dtypes)
      md << "| " << k.name << " | " << dtype_name(d.sweep.dtype) << " | " << d.sweep.rule << " | "
         << exact(d.atol) << " | " << exact(d.rtol) << " | " << d.sweep.cases << " | "
         << d.sweep.failed << " | " << g(d.sweep.worst_margin) << " | " << g(d.sweep.margin.p90)
         << " | " << d.sweep.verdict << " |\n";
  for (const auto& k : kernels)
    for (const auto& d : k.dtypes) {
      const auto& s = d.sweep;
      md << "\n## " << k.name << " " << dtype_name(s.dtype) << "\n\n"
         << "Max abs error per case p50/p90/p99/max: " << g(s.max_abs.p50) << " / "
         << g(s.max_abs.p90) << " / " << g(s.max_abs.p99) << " / " << g(s.max_abs.max)
         << "; max rel error: " << g(s.max_rel.p50) << " / " << g(s.max_rel.p90) << " / "
         << g(s.max_rel.p99) << " / " << g(s.max_rel.max) << ".\n";
      if (!d.worst_case.empty())
        md << "Closest case (margin " << g(d.worst_margin) << "): `" << d.worst_repro << "`\n";
      if (d.as_accurate_as_eager > 0) md << "\n" << as_accurate_as_eager_words(d) << "\n";
      md << "\nPass rate (allclose against the eager reference), rtol down, atol across; last "
            "column: the "
            "frontier (smallest atol every case passes with)\n\n| rtol \\ atol |";
      for (double a : grid.atols) md << " " << g(a) << " |";
      md << " frontier |\n|---|";
      for (size_t a = 0; a <= grid.atols.size(); ++a) md << "---|";
      md << "\n";
      for (size_t r = 0; r < grid.rtols.size(); ++r) {
        md << "| " << g(grid.rtols[r]) << " |";
        for (size_t a = 0; a < grid.atols.size(); ++a)
          md << " " << g(100 * s.pass_rate[r][a]) << "% |";
        md << " " << g(s.frontier_atol[r]) << " |\n";
      }
      md << "\nPass rate at multiples of the configured tolerance:";
      for (size_t i = 0; i < grid.scales.size(); ++i)
        md << " " << g(grid.scales[i]) << "x " << g(100 * s.scale_pass_rate[i]) << "%"
           << (i + 1 < grid.scales.size() ? "," : ".");
      md << "\n";
    }
  return md.str();
}

// ------------------------------------------------------------------------------------------------
// sweep.html: the tolerance curves as inline SVG (no script, no URL), one figure per kernel and
// dtype.

constexpr const char* kCurveColors[] = {"#1b6ac9", "#d9480f", "#2b8a3e",
                                        "#862e9c", "#e67700", "#495057"};

/// A polyline through (x, y) in plot coordinates.
std::string polyline(const std::vector<std::pair<double, double>>& points, const char* color) {
  std::ostringstream o;
  o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"1.6\" points=\"";
  for (const auto& [x, y] : points) o << std::fixed << std::setprecision(1) << x << "," << y << " ";
  o << "\"/>";
  for (const auto& [x, y] : points)
    o << "<circle cx=\"" << std::fixed << std::setprecision(1) << x << "\" cy=\"" << y
      << "\" r=\"2.2\" fill=\"" << color << "\"/>";
  return o.str();
}

/// Pass rate (0..1) against positions on a log axis; `xs` are the grid values, `marker` a value to
/// draw as a dashed vertical line (the configured tolerance; skipped when outside the axis).
std::string curve_plot(const std::string& title, const std::vector<double>& xs,
                       const std::vector<std::pair<std::string, std::vector<double>>>& curves,
                       double marker, const std::string& marker_label) {
  constexpr double kW = 420, kH = 200, kLeft = 44, kRight = 110, kTop = 22, kBottom = 34;
  const double plot_w = kW - kLeft - kRight, plot_h = kH - kTop - kBottom;
  if (xs.size() < 2) return "";
  const double lo = std::log(xs.front()), hi = std::log(xs.back());
  auto x_of = [&](double v) { return kLeft + plot_w * (std::log(v) - lo) / (hi - lo); };
  auto y_of = [&](double rate) { return kTop + plot_h * (1.0 - rate); };
  std::ostringstream o;
  o << "<svg width=\"" << kW << "\" height=\"" << kH << "\" viewBox=\"0 0 " << kW << " " << kH
    << "\" role=\"img\"><title>" << markup_escape(title) << "</title>"
    << "<text x=\"" << kLeft << "\" y=\"14\" font-size=\"12\">" << markup_escape(title)
    << "</text>";
  for (double r : {0.0, 0.5, 1.0})
    o << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + plot_w << "\" y1=\"" << y_of(r)
      << "\" y2=\"" << y_of(r) << "\" stroke=\"#ddd\"/><text x=\"" << kLeft - 4 << "\" y=\""
      << y_of(r) + 4 << "\" font-size=\"10\" text-anchor=\"end\">" << static_cast<int>(r * 100)
      << "%</text>";
  for (double v : xs)
    o << "<text x=\"" << x_of(v) << "\" y=\"" << kH - kBottom + 14
      << "\" font-size=\"10\" text-anchor=\"middle\">" << g(v) << "</text>";
  const double mlo = std::min(xs.front(), xs.back()), mhi = std::max(xs.front(), xs.back());
  if (std::isfinite(marker) && marker >= mlo && marker <= mhi)
    o << "<line x1=\"" << x_of(marker) << "\" x2=\"" << x_of(marker) << "\" y1=\"" << kTop
      << "\" y2=\"" << kTop + plot_h << "\" stroke=\"#c92a2a\" stroke-dasharray=\"4 3\"/><text x=\""
      << x_of(marker) + 3 << "\" y=\"" << kTop + 10 << "\" font-size=\"10\" fill=\"#c92a2a\">"
      << markup_escape(marker_label) << "</text>";
  for (size_t c = 0; c < curves.size(); ++c) {
    const char* color = kCurveColors[c % (sizeof kCurveColors / sizeof kCurveColors[0])];
    std::vector<std::pair<double, double>> pts;
    for (size_t i = 0; i < xs.size() && i < curves[c].second.size(); ++i)
      pts.emplace_back(x_of(xs[i]), y_of(curves[c].second[i]));
    o << polyline(pts, color) << "<text x=\"" << kW - kRight + 8 << "\" y=\"" << kTop + 12 + 13 * c
      << "\" font-size=\"10\" fill=\"" << color << "\">" << markup_escape(curves[c].first)
      << "</text>";
  }
  o << "</svg>";
  return o.str();
}

std::string html(const std::vector<SweptKernel>& kernels, const sensitivity::SweepGrid& grid) {
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>kgate "
       "sweep</title><style>"
       "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:"
       "collapse}"
       "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}th{background:#f3f3f3}"
       ".FRAGILE{color:#b35c00;font-weight:bold}.FAILED{color:#c92a2a;font-weight:bold}.ok{color:#"
       "2b8a3e}"
       "figure{display:inline-block;margin:0 1em 1em 0}code{font-size:90%}</style></head><body>\n"
    << "<h1>kgate sweep</h1><p>Margin = worst observed error / allowed error under the configured "
       "rule "
       "(&le; 1 passes). The curves are the pass rate over the cases: allclose against the eager "
       "reference "
       "per rtol as atol tightens, and the configured tolerance "
       "scaled.</p>\n<table><tr><th>kernel</th>"
       "<th>dtype</th><th>rule</th><th>atol</th><th>rtol</th><th>cases</th><th>failed</th><th>p90 "
       "margin</th>"
       "<th>worst margin</th><th>verdict</th></tr>\n";
  for (const auto& k : kernels)
    for (const auto& d : k.dtypes)
      h << "<tr><td>" << markup_escape(k.name) << "</td><td>" << dtype_name(d.sweep.dtype)
        << "</td><td>" << markup_escape(d.sweep.rule) << "</td><td>" << exact(d.atol) << "</td><td>"
        << exact(d.rtol) << "</td><td>" << d.sweep.cases << "</td><td>" << d.sweep.failed
        << "</td><td>" << g(d.sweep.margin.p90) << "</td><td>" << g(d.sweep.worst_margin)
        << "</td><td class=\"" << d.sweep.verdict << "\">" << d.sweep.verdict << "</td></tr>\n";
  h << "</table>\n";
  for (const auto& k : kernels)
    for (const auto& d : k.dtypes) {
      const auto& s = d.sweep;
      h << "<h2>" << markup_escape(k.name) << " " << dtype_name(s.dtype) << " <span class=\""
        << s.verdict << "\">" << s.verdict
        << "</span></h2>\n<p>Max abs error per case p50/p90/p99/max: " << g(s.max_abs.p50) << " / "
        << g(s.max_abs.p90) << " / " << g(s.max_abs.p99) << " / " << g(s.max_abs.max)
        << "; worst margin " << g(s.worst_margin) << " (FRAGILE above " << exact(k.fragile_margin)
        << ")";
      if (!d.worst_repro.empty())
        h << "; closest case: <code>" << markup_escape(d.worst_repro) << "</code>";
      h << "</p>\n";
      if (d.as_accurate_as_eager > 0)
        h << "<p>" << markup_escape(as_accurate_as_eager_words(d)) << "</p>\n";
      std::vector<std::pair<std::string, std::vector<double>>> by_rtol;
      for (size_t r = 0; r < grid.rtols.size(); ++r)
        by_rtol.emplace_back("rtol " + g(grid.rtols[r]), s.pass_rate[r]);
      h << "<figure>"
        << curve_plot("pass rate vs atol (allclose vs eager)", grid.atols, by_rtol, d.atol,
                      "configured")
        << "</figure><figure>"
        << curve_plot("pass rate vs tolerance scale", grid.scales,
                      {{"configured x s", s.scale_pass_rate}}, 1.0, "1x")
        << "</figure>\n";
    }
  h << "</body></html>\n";
  return h.str();
}

void print_table(std::ostream& os, const std::vector<SweptKernel>& kernels) {
  printf_to(os, "%-28s %-5s %-9s %9s %9s %6s %6s %10s %10s %s\n", "kernel", "dtype", "rule", "atol",
            "rtol", "cases", "failed", "p90 margin", "worst", "verdict");
  for (const auto& k : kernels)
    for (const auto& d : k.dtypes)
      printf_to(os, "%-28s %-5s %-9s %9s %9s %6lld %6lld %10s %10s %s\n", k.name.c_str(),
                dtype_name(d.sweep.dtype), d.sweep.rule.c_str(), exact(d.atol).c_str(),
                exact(d.rtol).c_str(), static_cast<long long>(d.sweep.cases),
                static_cast<long long>(d.sweep.failed), g(d.sweep.margin.p90).c_str(),
                g(d.sweep.worst_margin).c_str(), d.sweep.verdict.c_str());
  for (const auto& k : kernels)
    for (const auto& d : k.dtypes) {
      if (d.sweep.verdict == "FRAGILE")
        printf_to(os, "  %s %s FRAGILE (margin %s; threshold %s): %s\n", k.name.c_str(),
                  dtype_name(d.sweep.dtype), g(d.worst_margin).c_str(),
                  exact(k.fragile_margin).c_str(), d.worst_repro.c_str());
      if (d.sweep.verdict == "FAILED")
        printf_to(os,
                  "  %s %s FAILED: %lld case(s) fail the configured tolerance, %lld of them at any "
                  "tolerance; "
                  "e.g. %s\n    %s\n",
                  k.name.c_str(), dtype_name(d.sweep.dtype), static_cast<long long>(d.sweep.failed),
                  static_cast<long long>(d.sweep.hard_failures), d.worst_repro.c_str(),
                  d.worst_message.c_str());
      if (d.sweep.verdict == "FAILED" && d.as_accurate_as_eager > 0)
        printf_to(os, "    %s\n", as_accurate_as_eager_words(d, false).c_str());
    }
}

}  // namespace

std::string as_accurate_as_eager_words(const SweptDtype& d, bool fix) {
  if (d.as_accurate_as_eager == 0) return "";
  return std::to_string(d.as_accurate_as_eager) + " of the " + std::to_string(d.sweep.failed) +
         " failing case(s) are as accurate as eager against the float64 oracle (max abs error "
         "within " +
         g(correctness::kAsAccurateAsEagerFactor) + "x eager's): " +
         (fix ? correctness::as_accurate_as_eager_fix()
              : std::string("a tolerance too tight for the op, most likely (") +
                    correctness::kConditioningDocs + ")") +
         ".";
}

void write_sweep_json(std::ostream& os, const SweepReport& sweep) {
  ordered_json doc = {
      {"schema", "kgate-sweep/1"}, {"meta", sweep.meta}, {"kernels", ordered_json::array()}};
  for (const auto& k : sweep.kernels) doc["kernels"].push_back(kernel_json(k, sweep.grid));
  os << doc.dump(2) << "\n";
}

void write_sweep_markdown(std::ostream& os, const SweepReport& sweep) {
  os << markdown(sweep.kernels, sweep.grid);
}

void write_sweep_html(std::ostream& os, const SweepReport& sweep) {
  os << html(sweep.kernels, sweep.grid);
}

void write_sweep_console(std::ostream& os, const SweepReport& sweep) {
  print_table(os, sweep.kernels);
}

}  // namespace kgate
