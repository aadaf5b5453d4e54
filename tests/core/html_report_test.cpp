// report.html on fixed, synthetic results: a complete, self-contained document (no script, no URL),
// every report string escaped, sample plots where there are samples, "-" for non-finite numbers.
// Checks are on content, not on layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <string>

#include "report/writers.hpp"

namespace kgate {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size()))
    ++n;
  return n;
}

bool contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

SpeedComparison comparison(const std::string& baseline, Outcome decision, size_t samples) {
  SpeedComparison s;
  s.baseline = baseline;
  s.kcase = Case::from_id("softmax:f32:B=4096,N=1024:contiguous:normal:1");
  s.decision = decision;
  s.timer = "cupti";
  s.ratio = 0.91;
  s.ratio_lower = 0.90;
  s.ratio_upper = 0.92;
  s.p_value = 0.001;
  s.p_adjusted = 0.002;
  s.blocks = 30;
  s.baseline_median_ns = 12000;
  s.candidate_median_ns = 10900;
  for (size_t i = 0; i < samples; ++i) {
    s.baseline_ns.push_back(11500.0 + static_cast<double>(i % 17) * 60);
    s.candidate_ns.push_back(10500.0 + static_cast<double>(i % 13) * 70);
  }
  return s;
}

RunReport sample_report() {
  RunReport r;
  r.meta.kgate_version = "0.1.0";
  r.meta.backend = "cuda";
  r.meta.device = "NVIDIA H200";
  r.meta.driver = "550.54.15";
  r.meta.seed = 7;
  r.meta.git_sha = "0123456789abcdef0123";
  r.meta.command = "kgate check --kernel softmax_block";
  KernelReport good;
  good.name = "softmax_block";
  good.op = "softmax";
  good.backend = "cuda";
  good.correctness.cases = 64;
  good.correctness.passed = 64;
  good.correctness.worst_margin = 0.31;
  good.speed.push_back(comparison("eager", Outcome::passed, 100));
  KernelReport bad;
  bad.name = "softmax_tail";
  bad.op = "softmax";
  bad.backend = "cuda";
  bad.outcome = Outcome::failed;
  bad.correctness.cases = 64;
  bad.correctness.passed = 40;
  bad.correctness.failed = 24;
  bad.correctness.worst_margin = INFINITY;
  CaseResult f;
  f.kcase = Case::from_id("softmax:f32:B=1,N=33:contiguous:normal:2");
  f.outcome = Outcome::failed;
  f.rule = Reason::memory;
  f.margin = INFINITY;
  f.message = "1 of 33 output elements were never written";
  f.repro =
      "kgate replay --kernel softmax_tail "
      "'softmax:f32:B=1,N=33:contiguous:normal:0000000000000002'";
  bad.correctness.failures.push_back(f);
  bad.correctness.minimal = f;
  bad.correctness.warnings.push_back("FRAGILE: passes with a worst margin of 0.93");
  r.kernels = {good, bad};
  return r;
}

TEST(HtmlReport, IsOneCompleteDocument) {
  const auto html = render_html(sample_report());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>\n<html", 0), 0u);
  ASSERT_GE(html.size(), 8u);
  EXPECT_EQ(html.substr(html.size() - 8), "</html>\n");
  EXPECT_EQ(count(html, "<html"), 1u);
  EXPECT_EQ(count(html, "</body>"), 1u);
  EXPECT_EQ(count(html, "<style>"), 1u);
  // The headline is summary.md's wording, in the page title and in the heading.
  EXPECT_TRUE(contains(html, "<title>kgate: gate failed (exit 1)</title>"));
  EXPECT_TRUE(contains(html, "<h1 class=\"failed\">kgate: gate failed (exit 1)</h1>"));
  // Every opened SVG is closed.
  EXPECT_EQ(count(html, "<svg"), count(html, "</svg>"));
}

TEST(HtmlReport, HeadlineFollowsTheExitCode) {
  auto r = sample_report();
  r.kernels.pop_back();
  EXPECT_TRUE(contains(render_html(r), "<h1 class=\"passed\">kgate: all gates passed</h1>"));
  r.kernels[0].speed[0].decision = Outcome::inconclusive;
  const auto inconclusive = render_html(r);
  EXPECT_TRUE(contains(inconclusive, "kgate: all gates passed</h1>"));
  EXPECT_TRUE(contains(inconclusive, "exit 3 under --inconclusive-fails"));
  r.kernels[0].speed[0].decision = Outcome::regressed;
  EXPECT_TRUE(contains(render_html(r), "<h1 class=\"regressed\">kgate: gate failed (exit 2)</h1>"));
}

TEST(HtmlReport, ShowsMetaSummaryAndEveryKernel) {
  const auto html = render_html(sample_report());
  for (const char* name : {"softmax_block", "softmax_tail"}) {
    EXPECT_TRUE(contains(html, std::string("<code>") + name + "</code>")) << name;
    EXPECT_GE(count(html, name), 2u) << name << ": in the summary table and in its own section";
  }
  EXPECT_EQ(count(html, "<tr class=\"kernel"),
            8u);  // one summary row per kernel in each of 4 orders
  EXPECT_EQ(count(html, "<section class=\"kernel"), 2u);
  EXPECT_TRUE(contains(html, "<th>device</th><td>NVIDIA H200</td>"));
  EXPECT_TRUE(contains(html, "<th>driver</th><td>550.54.15</td>"));
  EXPECT_TRUE(contains(html, "<th>seed</th><td>7</td>"));
  EXPECT_TRUE(contains(html, "<code>0123456789abcdef0123</code>"));
  EXPECT_TRUE(contains(html, "<th>torch</th><td>-</td>"));  // empty fields print "-"
  // Summary row of the passing kernel: counts, margin, the speed ratio against eager and its
  // decision.
  EXPECT_TRUE(
      std::regex_search(html, std::regex("softmax_block</code></a></td><td>softmax</td><td>cuda</"
                                         "td><td><span class=\"badge passed\">"
                                         "passed</span></td><td class=\"num\">64/64</td><td "
                                         "class=\"num\">0</td><td class=\"num\">0\\.31"
                                         "</td><td class=\"num ratio\">1\\.099x faster</td>")));
  // The failing kernel: minimal case, message and repro (escaped quotes), the warning, the margin
  // bar.
  EXPECT_TRUE(
      contains(html, "Minimal failing case</b> <code>softmax:f32:B=1,N=33:contiguous:normal:"));
  EXPECT_TRUE(contains(html, "1 of 33 output elements were never written"));
  EXPECT_TRUE(
      contains(html, "repro: <code>kgate replay --kernel softmax_tail &#39;softmax:f32:B=1,N=33"));
  EXPECT_TRUE(contains(html, "<li>warning: FRAGILE: passes with a worst margin of 0.93</li>"));
  EXPECT_EQ(count(html, "<svg class=\"margin\""), 2u);
  EXPECT_EQ(count(html, "1.0 tol</text>"), 2u);
  EXPECT_TRUE(contains(html, "<rect class=\"bar failed\""));  // the Inf margin fills the bar in red
  EXPECT_TRUE(contains(html, "<rect class=\"bar passed\""));
}

TEST(HtmlReport, AFailedKernelsMarginBarIsRedWhateverItsMargin) {
  // A crash or a memory failure can leave a small margin: the bar must not read as a pass.
  RunReport r = sample_report();
  r.kernels.erase(r.kernels.begin());
  r.kernels[0].correctness.worst_margin = 0.05;
  const std::string html = render_html(r);
  EXPECT_TRUE(contains(html, "<rect class=\"bar failed\"")) << "a failed kernel's bar";
  EXPECT_FALSE(contains(html, "<rect class=\"bar passed\""));
  r.kernels[0].outcome = Outcome::passed;
  r.kernels[0].correctness.failed = 0;
  EXPECT_TRUE(contains(render_html(r), "<rect class=\"bar passed\""));
}

TEST(HtmlReport, EscapesEveryReportString) {
  const std::string evil = "<script>alert(1)</script> & \"quotes\" 'single'";
  auto r = sample_report();
  r.kernels[1].message = evil;
  r.kernels[1].name = "tail<b>";
  r.kernels[1].correctness.warnings.push_back(evil);
  r.kernels[1].correctness.minimal->repro = evil;
  r.kernels[0].speed[0].note = evil;
  r.kernels[0].speed[0].baseline = evil;
  r.meta.command = evil;
  r.meta.device = evil;
  r.meta.config = {{"note", evil}};
  const auto html = render_html(r);
  EXPECT_FALSE(contains(html, "<script")) << "raw script tag in the page";
  EXPECT_FALSE(contains(html, "tail<b>"));
  EXPECT_FALSE(contains(html, "'single'"));
  EXPECT_FALSE(contains(html, "\"quotes\""));
  const std::string escaped =
      "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot; &#39;single&#39;";
  // message, warning, repro, note, baseline column, meta command, meta device, page subtitle at
  // least.
  EXPECT_GE(count(html, escaped), 8u);
  EXPECT_TRUE(contains(html, "<code>tail&lt;b&gt;</code>"));
}

TEST(HtmlReport, SortsAndFiltersTheSummaryWithoutAScript) {
  const auto html =
      render_html(sample_report());  // softmax_block (passed), then softmax_tail (failed)
  const auto table = [&](const std::string& order) {
    const size_t at = html.find("<table class=\"summary " + order + "\">");
    EXPECT_NE(at, std::string::npos) << order;
    return at == std::string::npos ? std::string()
                                   : html.substr(at, html.find("</table>", at) - at);
  };
  const auto first = [](const std::string& t) {
    return t.find("softmax_block") < t.find("softmax_tail");
  };
  EXPECT_TRUE(first(table("order-run")));       // as run
  EXPECT_FALSE(first(table("order-outcome")));  // failures first
  EXPECT_FALSE(first(table("order-margin")));   // the failure's margin is Inf
  EXPECT_TRUE(contains(html, "<input type=\"radio\" name=\"order\" id=\"order-run\" checked>"));
  EXPECT_TRUE(contains(html, "<input type=\"checkbox\" id=\"only-failing\">"));
  // The filter hides what passed (rows and sections marked ok), by CSS alone.
  EXPECT_TRUE(contains(html, "body:has(#only-failing:checked) tr.kernel.ok"));
  EXPECT_EQ(count(html, "<tr class=\"kernel ok\">"), 4u);
  EXPECT_EQ(count(html, "<section class=\"kernel ok\""), 1u);
  EXPECT_EQ(count(html, "<section class=\"kernel\""), 1u);
  EXPECT_TRUE(contains(
      html, "table.summary:not(.order-run){display:none}"));  // without :has, the run order
  EXPECT_FALSE(contains(html, "<script"));
}

TEST(HtmlReport, HasNoScriptAndNoUrl) {
  auto r = sample_report();
  r.kernels[0].speed.push_back(comparison("softmax_rows@1.0.0", Outcome::inconclusive, 5000));
  const auto html = render_html(r);
  EXPECT_FALSE(contains(html, "<script"));
  EXPECT_FALSE(contains(html, "http"));
  EXPECT_FALSE(contains(html, "url("));
  EXPECT_FALSE(contains(html, "@import"));
  EXPECT_FALSE(contains(html, " src="));
  EXPECT_FALSE(contains(html, "<link"));
  EXPECT_FALSE(contains(html, "xmlns"));  // inline SVG in HTML5 needs no namespace URL
}

TEST(HtmlReport, PlotsSamplesOrSaysThereAreNone) {
  auto r = sample_report();
  r.kernels[1].speed.push_back(comparison("eager", Outcome::skipped, 0));
  const auto html = render_html(r);
  EXPECT_EQ(count(html, "<svg class=\"samples\""),
            1u);  // only the comparison with samples is plotted
  EXPECT_EQ(count(html, "<p class=\"note\">no samples</p>"), 1u);
  EXPECT_TRUE(contains(html, "time per launch (&micro;s)"));
  // Both arms drawn as box-and-whisker strips: a box and a median line each, 100 dots each.
  EXPECT_EQ(count(html, "<rect class=\"box\""), 2u);
  EXPECT_EQ(count(html, "<line class=\"median\""), 2u);
  EXPECT_EQ(count(html, "<circle "), 200u);
  // The axis covers the samples (10.5 to 12.46 µs) with 1-2-5 ticks labelled in µs.
  EXPECT_TRUE(std::regex_search(html, std::regex("<text class=\"tick\"[^>]*>10\\.5</text>")));
  EXPECT_TRUE(std::regex_search(html, std::regex("<text class=\"tick\"[^>]*>12\\.5</text>")));
}

TEST(HtmlReport, SubsamplesDotsDeterministically) {
  auto r = sample_report();
  r.kernels[0].speed[0] = comparison("eager", Outcome::passed, 100000);
  const auto html = render_html(r);
  const size_t dots = count(html, "<circle ");
  EXPECT_LE(dots, 800u);  // at most 400 per arm
  EXPECT_GE(dots, 700u);
  EXPECT_TRUE(contains(html, "one in every 250 shown"));
  EXPECT_EQ(html, render_html(r));  // same report, same bytes
  EXPECT_LT(html.size(), 200000u);  // 200000 samples do not end up in the page
}

TEST(HtmlReport, NonFiniteNumbersPrintAsDash) {
  auto r = sample_report();
  auto& s = r.kernels[0].speed[0];
  s.ratio = std::nan("");
  s.ratio_lower = -INFINITY;
  s.ratio_upper = INFINITY;
  s.p_value = std::nan("");
  s.baseline_median_ns = std::nan("");
  s.baseline_ns[3] = std::nan("");
  s.candidate_ns[5] = INFINITY;
  r.kernels[0].correctness.worst_margin = std::nan("");
  const auto html = render_html(r);
  EXPECT_TRUE(contains(
      html, "<td class=\"num ratio\">-</td><td class=\"num\">[-, -]</td><td class=\"num\">-</td>"));
  EXPECT_TRUE(contains(html, "worst margin -</span>"));
  EXPECT_FALSE(std::regex_search(html, std::regex("\\b(nan|inf)\\b", std::regex::icase)));
  // The finite samples are still plotted; the two non-finite ones are counted, not drawn.
  EXPECT_EQ(count(html, "<svg class=\"samples\""), 1u);
  EXPECT_EQ(count(html, "<circle "), 198u);
  EXPECT_TRUE(contains(html, "2 non-finite samples left out"));
}

TEST(HtmlReport, RendersAReportWithNoKernels) {
  RunReport r;
  const auto html = render_html(r);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.substr(html.size() - 8), "</html>\n");
  EXPECT_TRUE(contains(html, "kgate: all gates passed"));
  EXPECT_TRUE(contains(html, "No kernels in this report."));
  EXPECT_FALSE(contains(html, "<svg"));
  EXPECT_FALSE(contains(html, "<table class=\"summary\""));
}

}  // namespace
}  // namespace kgate
