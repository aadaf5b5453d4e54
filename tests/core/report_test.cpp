// Report writers on fixed, synthetic results: JSON round trip, JUnit, Markdown, annotations and the
// exit-code contract. Checks are on content, not formatting details.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "core/report.hpp"
#include "report/text.hpp"
#include "report/writers.hpp"

namespace kgate {
namespace {

RunReport sample_report() {
  RunReport r;
  r.meta.kgate_version = "0.1.0";
  r.meta.backend = "cuda";
  r.meta.device = "NVIDIA H200";
  r.meta.seed = 7;
  r.meta.git_sha = "0123456789abcdef0123";
  KernelReport good;
  good.name = "softmax_block";
  good.op = "softmax";
  good.backend = "cuda";
  good.correctness.cases = 64;
  good.correctness.passed = 64;
  good.correctness.worst_margin = 0.31;
  SpeedComparison s;
  s.baseline = "eager";
  s.kcase = Case::from_id("softmax:f32:B=4096,N=1024:contiguous:normal:1");
  s.decision = Outcome::passed;
  s.ratio = 0.91;
  s.ratio_lower = 0.90;
  s.ratio_upper = 0.92;
  s.baseline_ns = {10.0, 11.0};
  s.candidate_ns = {9.0, 10.0};
  s.blocks = 30;
  s.timer = "cupti";
  good.speed.push_back(s);
  KernelReport bad;
  bad.name = "softmax_tail";
  bad.op = "softmax";
  bad.backend = "cuda";
  bad.outcome = Outcome::failed;
  bad.correctness.cases = 64;
  bad.correctness.passed = 40;
  bad.correctness.failed = 24;
  CaseResult f;
  f.kcase = Case::from_id("softmax:f32:B=1,N=33:contiguous:normal:2");
  f.outcome = Outcome::failed;
  f.rule = Reason::memory;
  f.margin = INFINITY;
  f.message = "1 of 33 output elements were never written\nsecond line";
  f.repro =
      "kgate replay --kernel softmax_tail "
      "'softmax:f32:B=1,N=33:contiguous:normal:0000000000000002'";
  bad.correctness.failures.push_back(f);
  bad.correctness.minimal = f;
  r.kernels = {good, bad};
  return r;
}

TEST(Report, JsonHasSchemaAndRoundTrips) {
  const auto r = sample_report();
  const auto j = to_json(r);
  EXPECT_EQ(j.at("schema"), "kgate-report/1");
  EXPECT_EQ(j.at("exit_code"), 1);
  EXPECT_EQ(j.at("kernels")[1].at("correctness").at("minimal").at("margin"), "inf");
  const auto back = report_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_EQ(back.kernels.size(), 2u);
  EXPECT_EQ(back.kernels[0].speed[0].baseline_ns, r.kernels[0].speed[0].baseline_ns);
  EXPECT_EQ(back.kernels[1].correctness.minimal->kcase, r.kernels[1].correctness.minimal->kcase);
  EXPECT_TRUE(std::isinf(back.kernels[1].correctness.minimal->margin));
  EXPECT_EQ(to_json(back), j);
}

// Every reason has one name and reads back as itself; "" is none. The names are the report's
// `rule` strings: a change to one changes every report (and the goldens say so).
TEST(Report, EveryReasonRoundTripsThroughItsName) {
  std::set<std::string> names;
  for (int i = 0; i <= static_cast<int>(Reason::initcheck); ++i) {
    const auto reason = static_cast<Reason>(i);
    const std::string name = reason_name(reason);
    EXPECT_NE(name, "?") << i;
    EXPECT_TRUE(names.insert(name).second) << "two reasons named '" << name << "'";
    ASSERT_TRUE(find_reason(name).has_value()) << name;
    EXPECT_EQ(*find_reason(name), reason) << name;
  }
  EXPECT_EQ(reason_name(Reason::none), std::string());
  EXPECT_EQ(std::string(reason_name(Reason::reference_error)), "reference_error");
  EXPECT_FALSE(find_reason("close").has_value());
}

TEST(Report, AReportWithAnUnknownRuleIsRejectedNamingIt) {
  auto j = to_json(sample_report());
  j["kernels"][1]["correctness"]["minimal"]["rule"] = "close";
  try {
    report_from_json(j);
    FAIL() << "an unknown rule was read";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown rule 'close'"), std::string::npos) << what;
    EXPECT_NE(what.find("allclose, ulp"), std::string::npos) << what;
    EXPECT_NE(what.find("softmax:f32:B=1,N=33"), std::string::npos) << what;
  }
}

TEST(Report, RejectsOtherSchemas) {
  EXPECT_THROW(report_from_json({{"schema", "other/1"}}), Error);
}

TEST(Report, ExitCodesFollowTheContract) {
  auto r = sample_report();
  EXPECT_EQ(r.exit_code(false), ExitCode::correctness);
  r.kernels.pop_back();
  EXPECT_EQ(r.exit_code(false), ExitCode::ok);
  r.kernels[0].speed[0].decision = Outcome::inconclusive;
  EXPECT_EQ(r.exit_code(false), ExitCode::ok);
  EXPECT_EQ(r.exit_code(true), ExitCode::inconclusive);
  r.kernels[0].speed[0].decision = Outcome::regressed;
  EXPECT_EQ(r.exit_code(false), ExitCode::regression);
  r.kernels[0].speed[0].decision = Outcome::invalid;
  EXPECT_EQ(r.exit_code(true), ExitCode::inconclusive);
}

// An informational comparison ("gates": false, e.g. an UNCHANGED kernel's) decides nothing: not the
// exit code, not a JUnit failure; the flag survives the round trip, and base records do too.
TEST(Report, InformationalComparisonsDoNotGate) {
  auto r = sample_report();
  r.kernels.pop_back();
  r.kernels[0].speed[0].decision = Outcome::regressed;
  r.kernels[0].speed[0].gates = false;
  r.kernels[0].base = {{"name", "softmax_block"}, {"status", "paired"}};
  r.meta.base = {{"sha", "abc"}, {"error", ""}};
  r.removed = nlohmann::json::array({{{"name", "old_kernel"}, {"source", "kernels/old.cu"}}});
  EXPECT_EQ(r.exit_code(false), ExitCode::ok);
  const auto back = report_from_json(to_json(r));
  EXPECT_FALSE(back.kernels[0].speed[0].gates);
  EXPECT_EQ(back.kernels[0].base.value("status", std::string()), "paired");
  EXPECT_EQ(back.meta.base.value("sha", std::string()), "abc");
  EXPECT_EQ(back.removed.size(), 1u);
  EXPECT_EQ(back.exit_code(false), ExitCode::ok);
  std::ostringstream junit;
  write_junit(junit, back);
  EXPECT_EQ(junit.str().find("<failure"), std::string::npos) << junit.str();
  EXPECT_NE(junit.str().find("informational, does not gate"), std::string::npos) << junit.str();
  std::ostringstream md;
  write_markdown(md, back);
  EXPECT_NE(md.str().find("### Against the base (`abc`)"), std::string::npos) << md.str();
  EXPECT_NE(md.str().find("removed (informational)**: `old_kernel`"), std::string::npos)
      << md.str();
  r.kernels[0].speed[0].gates = true;
  EXPECT_EQ(r.exit_code(false), ExitCode::regression);
}

TEST(Report, JunitHasOneTestcasePerKernelAndGate) {
  std::ostringstream os;
  write_junit(os, sample_report());
  const auto xml = os.str();
  EXPECT_NE(xml.find("<testsuites name=\"kgate\" tests=\"3\" failures=\"1\" errors=\"0\" time=\""),
            std::string::npos);
  EXPECT_TRUE(std::regex_search(
      xml, std::regex("classname=\"kgate.cuda.softmax_tail\" name=\"correctness\"")));
  EXPECT_NE(
      xml.find("<failure message=\"1 of 33 output elements were never written\nsecond line\">"),
      std::string::npos);
  EXPECT_NE(xml.find("repro: kgate replay --kernel softmax_tail &#39;softmax:f32"),
            std::string::npos);
}

// The attributes the Jenkins xunit schema (junit-10.xsd) allows and requires on each element, and
// numeric times: checked on every tag the writer emits.
TEST(Report, JunitAttributesFitTheXunitSchema) {
  std::ostringstream os;
  RunReport r = sample_report();
  r.kernels[0].outcome = Outcome::skipped;
  write_junit(os, r);
  const auto xml = os.str();
  const std::map<std::string, std::pair<std::set<std::string>, std::set<std::string>>> rules = {
      {"testsuites", {{"name", "time", "tests", "failures", "disabled", "errors"}, {}}},
      {"testsuite",
       {{"name", "tests", "disabled", "errors", "failures", "hostname", "id", "package", "skipped",
         "time", "timestamp"},
        {"name", "tests"}}},
      {"testcase", {{"name", "assertions", "time", "classname", "status"}, {"name"}}},
      {"failure", {{"message", "type"}, {}}},
      {"skipped", {{"message"}, {}}},
  };
  const std::regex tag(R"re(<([a-z-]+)((?:\s+[a-z]+="[^"]*")*)\s*/?>)re"),
      attr(R"re(([a-z]+)="([^"]*)")re");
  int checked = 0;
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), tag); it != std::sregex_iterator();
       ++it) {
    const std::string name = (*it)[1];
    const auto rule = rules.find(name);
    if (rule == rules.end()) continue;
    ++checked;
    std::set<std::string> seen;
    const std::string attrs = (*it)[2];
    for (auto a = std::sregex_iterator(attrs.begin(), attrs.end(), attr);
         a != std::sregex_iterator(); ++a) {
      const std::string key = (*a)[1], value = (*a)[2];
      seen.insert(key);
      EXPECT_TRUE(rule->second.first.count(key)) << "<" << name << "> may not carry " << key;
      if (key == "time" || key == "tests" || key == "failures" || key == "errors" ||
          key == "skipped")
        EXPECT_TRUE(std::regex_match(value, std::regex(R"([0-9]+(\.[0-9]+)?)")))
            << name << " " << key << "=" << value;
    }
    for (const auto& required : rule->second.second)
      EXPECT_TRUE(seen.count(required)) << "<" << name << "> lacks " << required;
  }
  EXPECT_GE(checked, 6);
  // Every testcase says how long it took: speed testcases too (a reader shows NaN otherwise).
  const std::regex testcase("<testcase [^>]*>");
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), testcase);
       it != std::sregex_iterator(); ++it)
    EXPECT_NE(it->str().find(" time=\""), std::string::npos) << it->str();
}

// INVALID: JUnit, the summary, the annotations and the exit code say the same thing under the
// run's policy (meta.config.inconclusive_fails): a failure and exit 3 with it; without it exit 0,
// a skipped testcase and a warning, each saying that it does not fail the gate.
TEST(Report, WritersAndExitCodeAgreeOnInvalid) {
  for (const bool policy : {false, true}) {
    RunReport r = sample_report();
    r.kernels.pop_back();
    r.kernels[0].speed[0].decision = Outcome::invalid;
    r.kernels[0].speed[0].note =
        "12 of 30 blocks dropped (limit 20%); first reason: thermal throttle";
    r.meta.config = {{"inconclusive_fails", policy}};
    const auto code = r.exit_code(policy);
    EXPECT_EQ(code, policy ? ExitCode::inconclusive : ExitCode::ok);
    std::ostringstream junit, md, gh;
    write_junit(junit, r);
    write_markdown(md, r);
    write_github_annotations(gh, r);
    const std::string xml = junit.str();
    EXPECT_EQ(xml.find("failures=\"1\"") != std::string::npos, policy) << xml;
    EXPECT_NE(xml.find("thermal throttle"), std::string::npos) << xml;
    EXPECT_EQ(xml.find("<skipped message=\"INVALID (does not fail the gate") != std::string::npos,
              !policy)
        << xml;
    EXPECT_EQ(md.str().find("all gates passed") != std::string::npos, !policy) << md.str();
    EXPECT_EQ(md.str().find("gate failed (exit 3)") != std::string::npos, policy) << md.str();
    EXPECT_EQ(gh.str().find("::error title=kgate speed::") != std::string::npos, policy)
        << gh.str();
    EXPECT_EQ(gh.str().find("::warning title=kgate speed::") != std::string::npos, !policy)
        << gh.str();
  }
}

TEST(Report, CheckedTimingSurvivesTheRoundTripAndFailsTheJunitCase) {
  RunReport r = sample_report();
  r.kernels.pop_back();
  auto& s = r.kernels[0].speed[0];
  s.pools = 2;
  s.checked_launches = {{0, 1, 7}, {1, 1, 2}, {1, 0, 9}};
  CaseResult w;
  w.kcase = s.kcase;
  w.outcome = Outcome::failed;
  w.rule = Reason::wrong_while_timed;
  w.message =
      "wrong while timed: 'softmax_block' passed its checks, but its output in a timed launch "
      "fails";
  s.wrong_while_timed = w;
  s.decision = Outcome::failed;
  const RunReport back = report_from_json(nlohmann::json::parse(to_json(r).dump()));
  const auto& b = back.kernels[0].speed[0];
  EXPECT_EQ(b.pools, 2);
  ASSERT_EQ(b.checked_launches.size(), 3u);
  EXPECT_EQ(b.checked_launches[2].block, 1);
  EXPECT_EQ(b.checked_launches[2].arm, 0);
  EXPECT_EQ(b.checked_launches[2].launch, 9);
  ASSERT_TRUE(b.wrong_while_timed.has_value());
  EXPECT_EQ(b.wrong_while_timed->rule, Reason::wrong_while_timed);
  EXPECT_EQ(to_json(back), to_json(r));
  std::ostringstream os;
  write_junit(os, back);
  EXPECT_NE(os.str().find("<failure message=\"wrong while timed"), std::string::npos) << os.str();
}

TEST(Report, PhaseTimesSurviveTheRoundTripAndTimeTheJunitCases) {
  RunReport r = sample_report();
  r.kernels[0].seconds = 9;
  r.kernels[0].correctness.seconds = 2.5;
  ASSERT_FALSE(r.kernels[0].speed.empty());
  r.kernels[0].speed[0].seconds = 6.25;
  const RunReport back = report_from_json(to_json(r));
  EXPECT_DOUBLE_EQ(back.kernels[0].correctness.seconds, 2.5);
  EXPECT_DOUBLE_EQ(back.kernels[0].speed[0].seconds, 6.25);
  std::ostringstream os;
  write_junit(os, back);
  EXPECT_NE(os.str().find("name=\"correctness\" time=\"2.500\""), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("time=\"6.250\""), std::string::npos) << os.str();
}

TEST(Report, KernelAndReferenceFaultsAreListedApart) {
  RunReport r = sample_report();
  auto& c = r.kernels[0].correctness;
  c.faulted = {"softmax:f32:B=3,N=5:contiguous:normal:0000000000000001"};
  c.reference_faulted = {"softmax:f32:B=2,N=7:padded:normal:0000000000000002"};
  c.not_run = 4;
  c.resume_at = 9;
  c.reference_copies_at = 9;
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["kernels"][0]["correctness"]["reference_faulted"].size(), 1u) << j.dump();
  const RunReport back = report_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(back.kernels[0].correctness.faulted, c.faulted);
  EXPECT_EQ(back.kernels[0].correctness.reference_faulted, c.reference_faulted);
  EXPECT_EQ(back.kernels[0].correctness.reference_copies_at, 9);
  // Without faults of the reference, neither field is written, and a reader gets none.
  c.reference_faulted.clear();
  c.not_run = 0;
  const RunReport plain = report_from_json(to_json(r));
  EXPECT_FALSE(to_json(r)["kernels"][0]["correctness"].contains("reference_faulted"));
  EXPECT_EQ(plain.kernels[0].correctness.reference_copies_at, -1);
}

TEST(Report, TheCorrectnessCellCountsWhatItSays) {
  KernelReport k;
  k.correctness.cases = 64;
  k.correctness.passed = 64;
  EXPECT_EQ(correctness_cell(k), "passed 64/64");
  k.outcome = Outcome::failed;
  k.correctness.passed = 56;
  k.correctness.failed = 8;
  EXPECT_EQ(correctness_cell(k), "failed 8 of 64");
  k.correctness = CorrectnessReport{};
  EXPECT_EQ(correctness_cell(k), "failed, no case ran");
  k.outcome = Outcome::skipped;
  EXPECT_EQ(correctness_cell(k), "skipped");
  k.outcome = Outcome::invalid;
  k.correctness.cases = 64;
  k.correctness.passed = 60;
  k.correctness.reference_errors = 4;
  EXPECT_EQ(correctness_cell(k), "invalid 60/64");
}

TEST(Report, SpeedIsStatedOneWayEverywhere) {
  // A time ratio (kernel / baseline, below 1 faster) and a speedup (baseline / kernel) read alike.
  EXPECT_EQ(speed_words(0.910), "1.099x faster");
  EXPECT_EQ(speed_words(1.86), "1.860x slower");
  EXPECT_EQ(speed_words(1.0002), "same speed");
  EXPECT_EQ(speed_words(0.0), "-");
  EXPECT_EQ(speed_words(std::nan("")), "-");
  EXPECT_EQ(speedup_words(1.15), "1.150x faster");
  EXPECT_EQ(speedup_words(0.5), "2.000x slower");
  EXPECT_EQ(speedup_words(1.15), speed_words(1 / 1.15));
}

TEST(Report, APairedKernelLeadsWithItsVerdictAgainstTheBase) {
  RunReport r = sample_report();
  r.meta.base = {{"ref", "main"}, {"sha", "b7fc56c531ee7c30a95c"}};
  KernelReport& k = r.kernels.front();
  k.baseline = k.name;
  k.base = {{"status", "paired"}, {"name", k.name}};
  SpeedComparison vs_base = k.speed.front();
  vs_base.baseline = k.name;
  vs_base.decision = Outcome::regressed;
  vs_base.ratio = 1.074;
  vs_base.blocks = 30;
  k.speed.push_back(vs_base);  // after the eager comparison in the report
  std::ostringstream console, junit;
  write_console_table(console, r);
  write_junit(junit, r);
  const std::string c = console.str(), j = junit.str();
  // The row: its verdict against the base (named as the base) before eager.
  const auto row_start = c.find("\nsoftmax_block ");
  ASSERT_NE(row_start, std::string::npos) << c;
  const std::string row = c.substr(row_start + 1, c.find('\n', row_start + 1) - row_start - 1);
  const auto at_base = row.find("REGRESSED x1.074 vs softmax_block@main");
  ASSERT_NE(at_base, std::string::npos) << row;
  EXPECT_LT(at_base, row.find("faster, passed")) << row;
  EXPECT_NE(c.find("vs base (worst)"), std::string::npos) << c;
  // The comparison lines and JUnit: the base first, named as the base.
  EXPECT_LT(c.find("than softmax_block@main"), c.find("than eager")) << c;
  const auto base_case = j.find("name=\"speed vs base softmax_block@main ");
  ASSERT_NE(base_case, std::string::npos) << j;
  EXPECT_LT(base_case, j.find("name=\"speed vs eager ")) << j;
  // An UNCHANGED kernel says so in that column; a kernel without a base in a paired run, "new".
  k.base["status"] = "unchanged";
  std::ostringstream unchanged;
  write_console_table(unchanged, r);
  EXPECT_NE(unchanged.str().find("UNCHANGED"), std::string::npos) << unchanged.str();
}

TEST(Report, KernelsNotCheckedAreNamedEverywhereAndSurviveTheRoundTripAndMerge) {
  RunReport r = sample_report();
  r.not_checked.push_back({{"name", "l2_normalize_cpu"},
                           {"backend", "cpu"},
                           {"why", "a cpu kernel; this run checks the cuda backend"},
                           {"command", "kgate check --backend cpu --kernel 'l2_normalize_cpu'"}});
  std::ostringstream console, junit, md;
  write_console_table(console, r);
  write_junit(junit, r);
  write_markdown(md, r);
  EXPECT_LT(console.str().find("NOT CHECKED l2_normalize_cpu: a cpu kernel"),
            console.str().find("kernel "))
      << console.str();
  EXPECT_NE(junit.str().find("NOT CHECKED: a cpu kernel; this run checks the cuda backend; check "
                             "it with: kgate check --backend cpu"),
            std::string::npos)
      << junit.str();
  EXPECT_NE(md.str().find("`l2_normalize_cpu`"), std::string::npos) << md.str();
  EXPECT_EQ(r.exit_code(false), RunReport(sample_report()).exit_code(false));  // fails nothing
  const RunReport back = report_from_json(to_json(r));
  EXPECT_EQ(back.not_checked, r.not_checked);
  // Merged with a report that checked it, it is no longer "not checked".
  RunReport other = sample_report();
  other.kernels.resize(1);
  other.kernels.front().name = "l2_normalize_cpu";
  EXPECT_EQ(merge_reports({r, other}, {"a.json", "b.json"}).not_checked.size(), 0u);
  other.kernels.front().name = "something_else";
  EXPECT_EQ(merge_reports({r, other}, {"a.json", "b.json"}).not_checked.size(), 1u);
}

TEST(Report, MarkdownNamesTheFailureAndRepro) {
  std::ostringstream os;
  write_markdown(os, sample_report());
  const auto md = os.str();
  EXPECT_NE(md.find("gate failed (exit 1)"), std::string::npos);
  EXPECT_TRUE(std::regex_search(
      md,
      std::regex(R"(\| `softmax_block` \| softmax \| passed 64/64 \| 0\.31 \| 1\.099x faster)")));
  EXPECT_NE(md.find("- repro: `kgate replay --kernel softmax_tail"), std::string::npos);
}

TEST(Report, AnnotationsEscapeNewlines) {
  std::ostringstream os;
  write_github_annotations(os, sample_report());
  const auto text = os.str();
  EXPECT_EQ(text.find("::error title=kgate correctness::softmax_tail: 1 of 33"), 0u);
  EXPECT_NE(text.find("written%0Asecond line"), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
}

}  // namespace
}  // namespace kgate

namespace kgate {
namespace {

RunReport shard_of(const RunReport& whole, size_t kernel, double seconds) {
  RunReport r = whole;
  r.kernels = {whole.kernels.at(kernel)};
  r.meta.seconds = seconds;
  return r;
}

TEST(Merge, JoinsTheShardsKernelsInOrder) {
  const RunReport whole = sample_report();
  const auto merged =
      merge_reports({shard_of(whole, 0, 12.5), shard_of(whole, 1, 30.0)}, {"s1.json", "s2.json"});
  ASSERT_EQ(merged.kernels.size(), 2u);
  EXPECT_EQ(merged.kernels[0].name, "softmax_block");
  EXPECT_EQ(merged.kernels[1].name, "softmax_tail");
  EXPECT_DOUBLE_EQ(merged.meta.seconds, 30.0);  // side by side: the longest shard
  EXPECT_EQ(merged.meta.config["merged_from"], nlohmann::json({"s1.json", "s2.json"}));
  EXPECT_EQ(merged.exit_code(false), ExitCode::correctness);  // the failing kernel's shard decides
  // The merge of one shard with nothing else is that shard.
  EXPECT_EQ(merge_reports({shard_of(whole, 0, 1)}, {"s1.json"}).exit_code(false), ExitCode::ok);
}

TEST(Merge, AKernelInTwoShardsIsAUsageErrorNamingBoth) {
  const RunReport whole = sample_report();
  try {
    merge_reports({shard_of(whole, 0, 1), shard_of(whole, 0, 1)},
                  {"a/report.json", "b/report.json"});
    FAIL() << "a duplicated kernel was merged";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    const std::string what = e.what();
    EXPECT_NE(what.find("'softmax_block' is in both a/report.json and b/report.json"),
              std::string::npos)
        << what;
  }
}

TEST(Merge, ShardsOfOtherRunsAreRefused) {
  const RunReport whole = sample_report();
  RunReport other = shard_of(whole, 1, 1);
  other.meta.seed = 8;
  EXPECT_THROW(merge_reports({shard_of(whole, 0, 1), other}, {"a", "b"}), Error);
  other.meta.seed = whole.meta.seed;
  other.meta.backend = "cpu";
  EXPECT_THROW(merge_reports({shard_of(whole, 0, 1), other}, {"a", "b"}), Error);
  EXPECT_THROW(merge_reports({}, {}), Error);
}

}  // namespace
}  // namespace kgate
