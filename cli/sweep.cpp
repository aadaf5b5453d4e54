// `kgate sweep`: each case through Runner::check_case with the sweep's rtols, summarized per
// kernel and dtype by gates/sensitivity.
#include "cli/sweep.hpp"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/worker.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/report.hpp"
#include "core/safe_text.hpp"
#include "gates/props/generators.hpp"
#include "gates/sensitivity/sweep.hpp"
#include "references/catalogue.hpp"
#include "report/text.hpp"
#include "runtime/cuda/device.hpp"

namespace kgate::cli {
namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

/// One kernel or package to sweep, with its extra cases (a package's guard boundaries).
struct Target {
  const KernelInfo* kernel = nullptr;
  CheckOptions options;
};

/// A dtype's sweep, the configured tolerance it was judged against and its closest case.
struct DtypeResult {
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

struct KernelResult {
  std::string name, op, backend, source;
  int64_t fallback = 0;
  double fragile_margin = kDefaultFragileMargin;
  std::vector<DtypeResult> dtypes;
};

std::string g(double v) { return std::isinf(v) ? "inf" : format_number_or_dash(v); }

/// A setting (a configured tolerance, the fragility threshold) as it reads back: 1.2345e-05, not
/// g's 1.23e-05.
std::string exact(double v) { return std::isfinite(v) ? format_exact(v) : g(v); }

/// What a dtype whose failing cases are as accurate as eager says (one sentence; "" when none is):
/// how many, and, with `fix`, the likely cause and its fix (else the cause and the docs' section:
/// the console's shorter line, under the worst case's message).
std::string as_accurate_as_eager_words(const DtypeResult& d, bool fix = true) {
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

ordered_json quantiles_json(const sensitivity::Quantiles& q) {
  return {{"p50", json_number(q.p50)},
          {"p90", json_number(q.p90)},
          {"p99", json_number(q.p99)},
          {"max", json_number(q.max)}};
}

ordered_json kernel_json(const KernelResult& k, const sensitivity::SweepGrid& grid) {
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

std::string markdown(const std::vector<KernelResult>& kernels, const sensitivity::SweepGrid& grid) {
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

std::string html(const std::vector<KernelResult>& kernels, const sensitivity::SweepGrid& grid) {
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

bool numeric_rule(const std::string& rule) {
  const auto& names = correctness::rule_names();
  return std::find(names.begin(), names.end(), rule) != names.end();
}

KernelResult sweep_kernel(Runner& runner, const Target& t, const SweepArgs& args,
                          const sensitivity::SweepGrid& grid,
                          const std::function<void(const std::string&)>& say,
                          std::map<DType, std::vector<sensitivity::CaseErrors>>* raw = nullptr) {
  const KernelInfo& kernel = *t.kernel;
  const OpSignature& op = find_op(kernel.op);
  const KernelSettings settings = resolve_settings(op, kernel.name, t.options);  // once per kernel
  KernelResult k{kernel.name,           kernel.op, backend_name(kernel.backend), kernel.source, 0,
                 kDefaultFragileMargin, {}};
  k.fragile_margin =
      args.fragile_margin.value_or(settings.gates.fragile_margin.value_or(kDefaultFragileMargin));

  const props::GeneratorOptions& gen = settings.cases;
  auto traits = traits_of(kernel);
  traits.huge = false;  // tolerance sensitivity: the huge case's cost buys nothing here
  auto cases = props::generate_cases(op, traits, gen);
  const auto added = guard_and_extra_cases(kernel, t.options);
  cases.insert(cases.end(), added.begin(), added.end());

  std::map<DType, std::vector<sensitivity::CaseErrors>> per_dtype;
  std::map<DType, DtypeResult> results;
  const size_t step = std::max<size_t>(1, cases.size() / 8);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const auto rule = rule_for(op, c.dtype, settings);
    const CaseResult r = runner.check_case(kernel, c, rule, grid.rtols);
    const bool lost =
        runner.context_lost();  // this case faulted: nothing more runs in this context
    if ((i + 1) % step == 0 || i + 1 == cases.size())
      say(kernel.name + ": " + std::to_string(i + 1) + "/" + std::to_string(cases.size()) +
          " cases");
    if (r.fallback) {
      ++k.fallback;
      continue;
    }
    sensitivity::CaseErrors e;
    e.case_id = c.id();
    e.hard_failure = r.outcome == Outcome::failed && !numeric_rule(r.rule);
    e.hard_failure_rule = e.hard_failure ? r.rule : "";
    e.margin = r.margin;
    e.max_abs = r.vs_reference.max_abs;
    e.max_rel = r.vs_reference.max_rel;
    e.needed_atol = r.needed_atol;
    per_dtype[c.dtype].push_back(e);

    DtypeResult& d = results[c.dtype];
    if (correctness::failed_as_accurate_as_eager(r)) ++d.as_accurate_as_eager;
    d.sweep.rule = correctness::rule_name(rule.kind);
    d.atol = rule.tolerance.atol;
    d.rtol = rule.tolerance.rtol;
    const double closeness = e.hard_failure ? INFINITY : std::isnan(e.margin) ? INFINITY : e.margin;
    if (closeness > d.worst_margin) {
      d.worst_margin = closeness;
      d.worst_case = c.id();
      d.worst_repro = r.repro;
      d.worst_message = r.message;
    }
    if (lost) break;
  }
  for (auto& [dtype, d] : results) {
    const std::string rule = d.sweep.rule;
    d.sweep = sensitivity::summarize(dtype, per_dtype[dtype], grid, k.fragile_margin);
    d.sweep.rule = rule;
    k.dtypes.push_back(std::move(d));
  }
  if (raw) *raw = std::move(per_dtype);
  return k;
}

// A worker's result: each dtype's judged cases, before the summary (the parent summarizes, so
// the worker's file is small and its meaning simple).
ordered_json raw_json(const KernelResult& k,
                      const std::map<DType, std::vector<sensitivity::CaseErrors>>& per_dtype) {
  ordered_json dtypes = ordered_json::array();
  for (const auto& d : k.dtypes) {
    ordered_json cases = ordered_json::array();
    for (const auto& e : per_dtype.at(d.sweep.dtype))
      cases.push_back({{"id", e.case_id},
                       {"hard", e.hard_failure},
                       {"hard_rule", e.hard_failure_rule},
                       {"margin", json_number(e.margin)},
                       {"max_abs", json_number(e.max_abs)},
                       {"max_rel", json_number(e.max_rel)},
                       {"needed_atol", e.needed_atol}});
    dtypes.push_back({{"dtype", dtype_name(d.sweep.dtype)},
                      {"rule", d.sweep.rule},
                      {"atol", d.atol},
                      {"rtol", d.rtol},
                      {"worst_case", d.worst_case},
                      {"worst_repro", d.worst_repro},
                      {"worst_message", d.worst_message},
                      {"worst_margin", json_number(d.worst_margin)},
                      {"as_accurate_as_eager", d.as_accurate_as_eager},
                      {"cases", cases}});
  }
  return {{"name", k.name},         {"op", k.op},
          {"backend", k.backend},   {"source", k.source},
          {"fallback", k.fallback}, {"fragile_margin", k.fragile_margin},
          {"dtypes", dtypes}};
}

double raw_number(const nlohmann::json& j, const char* key) {
  const auto& v = j.at(key);
  return v.is_number()                                    ? v.get<double>()
         : v.is_string() && v.get<std::string>() == "inf" ? INFINITY
                                                          : NAN;
}

KernelResult from_raw(const nlohmann::json& j, const sensitivity::SweepGrid& grid) {
  KernelResult k{
      j.at("name"),           j.at("op"), j.at("backend"), j.at("source"), j.at("fallback"),
      j.at("fragile_margin"), {}};
  for (const auto& dj : j.at("dtypes")) {
    std::vector<sensitivity::CaseErrors> cases;
    for (const auto& cj : dj.at("cases")) {
      sensitivity::CaseErrors e;
      e.case_id = cj.at("id");
      e.hard_failure = cj.at("hard");
      e.hard_failure_rule = cj.at("hard_rule");
      e.margin = raw_number(cj, "margin");
      e.max_abs = raw_number(cj, "max_abs");
      e.max_rel = raw_number(cj, "max_rel");
      for (const auto& a : cj.at("needed_atol"))
        e.needed_atol.push_back(a.is_number() ? a.get<double>() : INFINITY);
      cases.push_back(std::move(e));
    }
    DtypeResult d;
    const DType dtype = parse_dtype(dj.at("dtype"));
    d.sweep = sensitivity::summarize(dtype, cases, grid, k.fragile_margin);
    d.sweep.rule = dj.at("rule");
    d.atol = dj.at("atol");
    d.rtol = dj.at("rtol");
    d.worst_case = dj.at("worst_case");
    d.worst_repro = dj.at("worst_repro");
    d.worst_message = dj.at("worst_message");
    d.worst_margin = raw_number(dj, "worst_margin");
    d.as_accurate_as_eager = dj.value("as_accurate_as_eager", int64_t{0});
    k.dtypes.push_back(std::move(d));
  }
  return k;
}

// The row of a kernel whose worker left no result (a crash, a hang): FAILED, with the reason.
KernelResult failed_sweep(const KernelInfo& kernel, const std::string& failure) {
  KernelResult k{kernel.name,           kernel.op, backend_name(kernel.backend), kernel.source, 0,
                 kDefaultFragileMargin, {}};
  DtypeResult d;
  sensitivity::CaseErrors e;
  e.case_id = "-";
  e.hard_failure = true;
  e.hard_failure_rule = "worker";
  d.sweep = sensitivity::summarize(kernel.dtypes.empty() ? DType::f32 : kernel.dtypes.front(), {e},
                                   sensitivity::SweepGrid{}, kDefaultFragileMargin);
  d.sweep.rule = "-";
  d.worst_case = "-";
  d.worst_message = failure;
  d.worst_margin = INFINITY;
  k.dtypes.push_back(std::move(d));
  return k;
}

void print_table(const std::vector<KernelResult>& kernels) {
  std::printf("%-28s %-5s %-9s %9s %9s %6s %6s %10s %10s %s\n", "kernel", "dtype", "rule", "atol",
              "rtol", "cases", "failed", "p90 margin", "worst", "verdict");
  for (const auto& k : kernels)
    for (const auto& d : k.dtypes)
      std::printf("%-28s %-5s %-9s %9s %9s %6lld %6lld %10s %10s %s\n", k.name.c_str(),
                  dtype_name(d.sweep.dtype), d.sweep.rule.c_str(), exact(d.atol).c_str(),
                  exact(d.rtol).c_str(), static_cast<long long>(d.sweep.cases),
                  static_cast<long long>(d.sweep.failed), g(d.sweep.margin.p90).c_str(),
                  g(d.sweep.worst_margin).c_str(), d.sweep.verdict.c_str());
  for (const auto& k : kernels)
    for (const auto& d : k.dtypes) {
      if (d.sweep.verdict == "FRAGILE")
        std::printf("  %s %s FRAGILE (margin %s; threshold %s): %s\n", k.name.c_str(),
                    dtype_name(d.sweep.dtype), g(d.worst_margin).c_str(),
                    exact(k.fragile_margin).c_str(), d.worst_repro.c_str());
      if (d.sweep.verdict == "FAILED")
        std::printf(
            "  %s %s FAILED: %lld case(s) fail the configured tolerance, %lld of them at any "
            "tolerance; "
            "e.g. %s\n    %s\n",
            k.name.c_str(), dtype_name(d.sweep.dtype), static_cast<long long>(d.sweep.failed),
            static_cast<long long>(d.sweep.hard_failures), d.worst_repro.c_str(),
            d.worst_message.c_str());
      if (d.sweep.verdict == "FAILED" && d.as_accurate_as_eager > 0)
        std::printf("    %s\n", as_accurate_as_eager_words(d, false).c_str());
    }
}

}  // namespace

CLI::App* add_sweep_command(CLI::App& app, SweepArgs& args) {
  auto* cmd = app.add_subcommand(
      "sweep",
      "Tolerance sensitivity: per kernel and dtype, the error distribution, the pass rate over a "
      "tolerance grid, the tightest passing tolerance and the margin; FRAGILE when a kernel passes "
      "with a margin above the threshold; writes sweep.json, sweep.md and sweep.html (exit 1: a "
      "kernel fails its "
      "tolerance, or is FRAGILE with --fail-on-fragile)");
  auto& opt = args.options;
  cmd->add_option("packages", args.packages, "Exported package directories to sweep on the GPU")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--kernel", args.kernels,
                  "Kernel to sweep (repeatable; default: all but mutants, unless packages)")
      ->allow_extra_args(false);
  cmd->add_option("--arch", args.arch, "NVRTC target for packages (default: the GPU's)");
  cmd->add_option("--backend", args.backend, "cuda or cpu (default: cuda when a GPU is present)")
      ->check(CLI::IsMember({"cuda", "cpu"}));
  cmd->add_option("--seed", opt.seed, "Master seed")->capture_default_str();
  cmd->add_option("--cases", opt.cases, "Cases per kernel")
      ->capture_default_str()
      ->check(above_zero());
  add_family_option(
      *cmd, opt.families, props::all_families(),
      "Case families (random, ragged, extreme, special, layout, long); repeatable, or a "
      "comma list: random,ragged");
  cmd->add_option("--rule", opt.rule,
                  "Correctness rule the margin is taken under (default: the op's)")
      ->check(CLI::IsMember(correctness::rule_names()));
  cmd->add_option("--config", args.config_path, "Config file (kgate-config/1)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--atol", opt.atol, "Configured absolute tolerance (overrides the op's default)")
      ->check(tolerance_value());
  cmd->add_option("--rtol", opt.rtol, "Configured relative tolerance (overrides the op's default)")
      ->check(tolerance_value());
  cmd->add_option("--fragile-margin", args.fragile_margin,
                  "Margin above which a passing kernel is FRAGILE (default: the config's "
                  "fragile_margin, else 0.8)")
      ->check(fragile_margin_value());
  cmd->add_flag("--fail-on-fragile", args.fail_on_fragile, "Exit 1 when a kernel is FRAGILE");
  cmd->add_option("--out", args.out_dir, "Directory for sweep.json, sweep.md and sweep.html")
      ->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a worker gets its own
  cmd->add_option(
      "--no-device-exit-code", args.no_device_exit_code,
      "Exit with this code (e.g. 77 = SKIPPED for CTest) when --backend cuda finds no GPU");
  cmd->add_flag("-q,--quiet", args.quiet, "No progress lines");
  cmd->add_flag_callback(
      "--no-isolate", [&args] { args.isolate = false; },
      "Sweep every kernel in this process (default: one worker process each, under a watchdog)");
  cmd->add_option("--kernel-timeout", args.kernel_timeout_s,
                  "Seconds before a kernel's worker counts as hung")
      ->capture_default_str()
      ->check(timeout_value());
  cmd->add_option("--only", args.only, "")->group("");  // internal: the worker's kernel
  cmd->add_flag("--in-worker", args.in_worker, "")->group("");
  return cmd;
}

int run_sweep(SweepArgs& args) {
  const auto t0 = std::chrono::steady_clock::now();
  auto& opt = args.options;
  if (!args.config_path.empty()) opt.config = load_config(args.config_path);
  for (const auto& p : opt.config.op_files) add_ops_path(p);
  if (!args.packages.empty() && args.backend == "cpu")
    throw_usage(
        "packages run on the cuda backend: drop --backend cpu (or sweep in-tree cpu kernels with "
        "--kernel)");
  // A worker confines itself before it starts CUDA or runs anything of a package or an op file.
  if (args.in_worker) {
    const std::string sandbox = enter_worker_sandbox(args.packages, args.out_dir);
    if (sandbox.rfind("none", 0) == 0 && !args.quiet)
      std::fprintf(stderr,
                   "kgate: warning: the worker runs unconfined (%s); --require-sandbox makes this "
                   "an error\n",
                   sandbox.c_str() + 6);
  }

  std::string why;
  const bool have_device = cuda::device_available(&why);
  std::vector<LoadedPackage> packages;
  if (!args.packages.empty()) {
    auto loaded = load_packages(args.packages, args.arch, have_device, args.quiet);
    if (!loaded) return static_cast<int>(ExitCode::usage);
    packages = std::move(*loaded);
  }
  Backend backend;
  if (!packages.empty() || args.backend == "cuda") {
    backend = Backend::cuda;
  } else if (args.backend.empty()) {
    backend = have_device ? Backend::cuda : Backend::cpu;
    if (!have_device)
      std::fprintf(stderr, "kgate: %s — sweeping the cpu backend's kernels instead\n", why.c_str());
  } else {
    backend = Backend::cpu;
  }
  if (backend == Backend::cuda && !have_device) {
    if (args.no_device_exit_code) {
      std::printf("SKIPPED: %s\n", why.c_str());
      return *args.no_device_exit_code;
    }
    throw Error(ErrorKind::usage,
                why + " (--backend cuda needs a GPU; use --backend cpu on machines without one)");
  }

  std::vector<Target> targets;
  if (!args.kernels.empty() || packages.empty())
    for (const KernelInfo* k : select_kernels(args.kernels, backend)) targets.push_back({k, opt});
  for (const auto& p : packages) targets.push_back({&p.kernel, package_options(opt, p)});
  if (targets.empty())
    throw_usage(std::string("no kernels to sweep on the ") + backend_name(backend) + " backend");

  if (!args.only.empty()) {
    targets.erase(std::remove_if(targets.begin(), targets.end(),
                                 [&](const Target& t) { return t.kernel->name != args.only; }),
                  targets.end());
    if (targets.size() != 1)
      throw_usage("--only " + args.only + ": no such kernel or package in this sweep");
  }
  fs::create_directories(args.out_dir);
  const sensitivity::SweepGrid grid;
  const Progress say(args.quiet);
  // A worker sweeps its one kernel and writes the judged cases for its parent.
  if (args.in_worker) {
    Runner runner(backend);
    std::map<DType, std::vector<sensitivity::CaseErrors>> raw;
    const KernelResult k = sweep_kernel(runner, targets.front(), args, grid, say, &raw);
    say.end_line();
    write_file_atomically(fs::path(args.out_dir) / "raw.json", raw_json(k, raw).dump() + "\n");
    return 0;
  }
  const bool isolate = args.isolate;
  std::optional<Runner> runner;
  RunnerEnvironment env;
  if (!isolate) {
    runner.emplace(backend);
    env = runner->environment();
  }

  ordered_json doc = {{"schema", "kgate-sweep/1"},
                      {"meta", run_meta(args.command_line, backend, env, opt.seed)},
                      {"kernels", ordered_json::array()}};
  const fs::path json_path = fs::path(args.out_dir) / "sweep.json";
  std::vector<KernelResult> results;
  for (size_t i = 0; i < targets.size(); ++i) {
    const KernelInfo& kernel = *targets[i].kernel;
    if (!args.quiet)
      std::fprintf(stderr, "[%zu/%zu] %s (%s)%s\n", i + 1, targets.size(), kernel.name.c_str(),
                   kernel.op.c_str(), isolate ? " in a worker process" : "");
    if (isolate) {
      const fs::path worker_out = fs::path(args.out_dir) / "workers" / kernel.name;
      std::vector<std::string> child = args.argv;
      child.insert(child.end(),
                   {"--only", kernel.name, "--out", worker_out.string(), "--in-worker"});
      if (args.backend.empty() && packages.empty())
        child.insert(child.end(), {"--backend", backend_name(backend)});
      std::error_code ignored;
      fs::remove(worker_out / "raw.json", ignored);
      const auto w = run_worker(child, "", args.kernel_timeout_s);
      const std::string said = w.output.empty() ? std::string() : safe_log_text(w.output.text());
      if (!said.empty()) std::fputs((said + (said.back() == '\n' ? "" : "\n")).c_str(), stderr);
      std::optional<KernelResult> k;
      std::string failure = w.failure;
      if (w.exit_code == 0 && failure.empty()) {
        try {
          std::ifstream in(worker_out / "raw.json");
          k = from_raw(nlohmann::json::parse(in), grid);
        } catch (const std::exception& e) {
          failure = std::string("the worker's result is unreadable: ") + e.what();
        }
      } else if (failure.empty()) {
        failure = "the worker exited with code " + std::to_string(w.exit_code);
      }
      if (!k) {
        std::fprintf(stderr, "kgate: %s: %s\n", kernel.name.c_str(), failure.c_str());
        k = failed_sweep(kernel, "kernel '" + kernel.name + "': " + failure);
      }
      results.push_back(std::move(*k));
    } else {
      results.push_back(sweep_kernel(*runner, targets[i], args, grid, say));
      say.end_line();
    }
    // Written after every kernel: a later crash loses nothing already measured.
    doc["kernels"].push_back(kernel_json(results.back(), grid));
    doc["meta"]["seconds"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    write_file_atomically(json_path, doc.dump(2) + "\n");
  }
  write_file_atomically(fs::path(args.out_dir) / "sweep.md", markdown(results, grid));
  write_file_atomically(fs::path(args.out_dir) / "sweep.html", html(results, grid));

  print_table(results);
  int failed = 0, fragile = 0;
  for (const auto& k : results)
    for (const auto& d : k.dtypes) {
      failed += d.sweep.verdict == "FAILED";
      fragile += d.sweep.verdict == "FRAGILE";
    }
  std::printf(
      "\n%d kernel x dtype row(s) failed their tolerance, %d FRAGILE; grids in %s/sweep.md, curves "
      "in "
      "sweep.html, all figures in %s (%.1f s)\n",
      failed, fragile, args.out_dir.c_str(), json_path.string().c_str(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (failed > 0 || (fragile > 0 && args.fail_on_fragile))
    return static_cast<int>(ExitCode::correctness);
  return 0;
}

}  // namespace kgate::cli
