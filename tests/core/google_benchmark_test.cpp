// Google Benchmark JSON kept in the report: reading and checking a file (exact messages for the
// ways it can be wrong), the report round trip, the Markdown table, and that it decides nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/google_benchmark.hpp"
#include "core/report.hpp"
#include "report/writers.hpp"
#include "tests/support/usage_error.hpp"

namespace kgate {
namespace {

namespace fs = std::filesystem;

const std::string kFixture = std::string(KGATE_TEST_DATA) + "/google_benchmark/softmax_cpu.json";
const std::string kHint =
    " (--benchmark-json takes the file Google Benchmark writes with --benchmark_out=FILE "
    "--benchmark_out_format=json)";

std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path dir = fs::path(::testing::TempDir()) / "kgate_google_benchmark_test";
  fs::create_directories(dir);
  const auto path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

using testing::usage_error;

TEST(GoogleBenchmark, ReadsAValidOutputAsWritten) {
  const auto g = read_google_benchmark_json(kFixture);
  EXPECT_EQ(g.file, kFixture);
  EXPECT_EQ(g.context.at("kgate_kernel"), "softmax_cpu");
  EXPECT_EQ(g.context.at("num_cpus"), 2);
  ASSERT_EQ(g.benchmarks.size(), 14u);  // 2 shapes x (3 repetitions + mean, median, stddev, cv)
  EXPECT_EQ(g.benchmarks[0].at("name"), "softmax_cpu/f32/B:4096/N:1024/manual_time");
  EXPECT_EQ(g.benchmarks[0].at("real_time"), 2140.3);
  EXPECT_EQ(g.benchmarks[4].at("aggregate_name"), "median");
  std::ifstream f(kFixture);
  const auto raw = nlohmann::json::parse(f);
  EXPECT_EQ(g.context, raw.at("context"));
  EXPECT_EQ(g.benchmarks, raw.at("benchmarks"));
}

TEST(GoogleBenchmark, MissingFile) {
  const auto path = (fs::path(::testing::TempDir()) / "no_such_dir" / "missing.json").string();
  EXPECT_EQ(usage_error([&] { read_google_benchmark_json(path); }),
            path + ": no such file" + kHint);
}

TEST(GoogleBenchmark, NotJson) {
  const auto path =
      write_temp("not_json.json", "{\n  \"context\": {},\n  \"benchmarks\": [oops]\n}\n");
  EXPECT_EQ(usage_error([&] { read_google_benchmark_json(path); }),
            path + ": not valid JSON (parse error on line 3)" + kHint);
}

TEST(GoogleBenchmark, EmptyFile) {
  const auto path = write_temp("empty.json", "");
  EXPECT_EQ(usage_error([&] { read_google_benchmark_json(path); }),
            path + ": is empty (did the benchmark run finish?)" + kHint);
}

TEST(GoogleBenchmark, JsonWithoutBenchmarks) {
  const auto path = write_temp("no_benchmarks.json", R"({"context": {"date": "2025-11-30"}})");
  EXPECT_EQ(usage_error([&] { read_google_benchmark_json(path); }),
            path + ": not Google Benchmark JSON output: no \"benchmarks\" array at the top level" +
                kHint);
}

TEST(GoogleBenchmark, OtherShapesAreRejectedWithTheirReason) {
  EXPECT_EQ(usage_error([] { parse_google_benchmark_json("[1, 2]", "a.json"); }),
            "a.json: not Google Benchmark JSON output: the top level is an array, expected an "
            "object with "
            "\"context\" and \"benchmarks\"" +
                kHint);
  EXPECT_EQ(
      usage_error([] { parse_google_benchmark_json(R"({"benchmarks": []})", "b.json"); }),
      "b.json: not Google Benchmark JSON output: no \"context\" object at the top level" + kHint);
  EXPECT_EQ(usage_error([] {
              parse_google_benchmark_json(
                  R"({"context": {}, "benchmarks": [{"name": "x"}, {"real_time": 1}]})", "c.json");
            }),
            "c.json: benchmarks[1] has no \"name\" string" + kHint);
  EXPECT_EQ(usage_error([] { read_google_benchmark_json(::testing::TempDir()); }),
            ::testing::TempDir() + ": is a directory, not a file" + kHint);
}

TEST(GoogleBenchmark, NonFiniteNumbersBecomeTheReportsStrings) {
  // Google Benchmark writes a non-finite double bare (e.g. the cv of a zero mean); inside strings
  // the same letters stay as they are.
  const auto g = parse_google_benchmark_json(
      R"({"context": {"note": "NaN Infinity"}, "benchmarks": [)"
      R"({"name": "k_cv", "real_time": NaN, "cpu_time": -Infinity, "bytes_per_second": Infinity}]})",
      "d.json");
  EXPECT_EQ(g.context.at("note"), "NaN Infinity");
  EXPECT_EQ(g.benchmarks[0].at("real_time"), "nan");
  EXPECT_EQ(g.benchmarks[0].at("cpu_time"), "-inf");
  EXPECT_EQ(g.benchmarks[0].at("bytes_per_second"), "inf");
}

TEST(GoogleBenchmark, EmbeddedInTheReportAndReadBack) {
  RunReport r;
  r.meta.backend = "cpu";
  r.meta.device = "cpu";
  EXPECT_FALSE(to_json(r).contains("google_benchmark"));  // reports without it are unchanged
  r.google_benchmark.push_back(read_google_benchmark_json(kFixture));
  const auto j = to_json(r);
  ASSERT_TRUE(j.at("google_benchmark").is_array());
  ASSERT_EQ(j.at("google_benchmark").size(), 1u);
  const auto& g = j.at("google_benchmark")[0];
  EXPECT_EQ(g.at("file"), kFixture);
  EXPECT_EQ(g.at("context").at("kgate_op"), "softmax");
  EXPECT_EQ(g.at("benchmarks").size(), 14u);
  const auto back = report_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_EQ(back.google_benchmark.size(), 1u);
  EXPECT_EQ(back.google_benchmark[0], r.google_benchmark[0]);
  EXPECT_EQ(to_json(back), j);
}

TEST(GoogleBenchmark, DecidesNothing) {
  RunReport r;
  KernelReport k;
  k.name = "softmax_cpu";
  k.correctness.cases = 8;
  k.correctness.passed = 8;
  r.kernels.push_back(k);
  const auto without = r.exit_code(true);
  // An output full of errors and slow numbers changes no exit code.
  r.google_benchmark.push_back(parse_google_benchmark_json(
      R"({"context": {}, "benchmarks": [{"name": "softmax_cpu/x", "error_occurred": true,)"
      R"( "error_message": "SKIPPED: no GPU", "real_time": 1e9}]})",
      "e.json"));
  EXPECT_EQ(r.exit_code(true), without);
  EXPECT_EQ(to_json(r).at("exit_code"), static_cast<int>(without));
}

TEST(GoogleBenchmark, LenientWhenReadingAReport) {
  const auto g = google_benchmark_from_json({{"file", "f.json"}, {"benchmarks", "not an array"}});
  EXPECT_EQ(g.file, "f.json");
  EXPECT_TRUE(g.context.is_object());
  EXPECT_TRUE(g.benchmarks.is_array() && g.benchmarks.empty());
}

TEST(GoogleBenchmark, MarkdownRowPerBenchmarkWithItsMedian) {
  RunReport r;
  r.google_benchmark.push_back(read_google_benchmark_json(kFixture));
  std::ostringstream md;
  write_markdown(md, r);
  const auto text = md.str();
  EXPECT_NE(text.find("### Google Benchmark"), std::string::npos);
  EXPECT_NE(text.find("2 benchmarks (14 entries) from `" + kFixture + "`"), std::string::npos);
  EXPECT_NE(text.find("| benchmark | real / manual time | cpu time | statistic |"),
            std::string::npos);
  EXPECT_NE(text.find("| `softmax_cpu/f32/B:4096/N:1024/manual_time` | 2122 us (manual) | 2121 us "
                      "| median of 3 |"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("| `softmax_cpu/f32/B:1024/N:4096/manual_time` | 2032 us (manual) | 2031 us "
                      "| median of 3 |"),
            std::string::npos)
      << text;
  // Repetitions and the other aggregates stay in report.json only.
  EXPECT_EQ(text.find("_mean"), std::string::npos);
}

TEST(GoogleBenchmark, MarkdownWithoutAggregatesErrorsAndTooManyRows) {
  std::vector<GoogleBenchmarkOutput> outputs = {parse_google_benchmark_json(
      R"({"context": {}, "benchmarks": [)"
      R"({"name": "a", "run_name": "a", "run_type": "iteration", "real_time": 3, "cpu_time": 1, "time_unit": "ns"},)"
      R"({"name": "b", "run_name": "b", "run_type": "iteration", "real_time": 5, "cpu_time": 2, "time_unit": "ms"},)"
      R"({"name": "a", "run_name": "a", "run_type": "iteration", "real_time": 1, "cpu_time": 1, "time_unit": "ns"},)"
      R"({"name": "c|d", "run_name": "c|d", "error_occurred": true, "error_message": "SKIPPED: no GPU"}]})",
      "f.json")};
  std::ostringstream md;
  write_google_benchmark_markdown(md, outputs, 2);
  const auto text = md.str();
  EXPECT_NE(text.find("| `a` | 2 ns | 1 ns | median of 2 runs |"), std::string::npos) << text;
  EXPECT_NE(text.find("| `b` | 5 ms | 2 ms | 1 run |"), std::string::npos) << text;
  EXPECT_NE(text.find("1 more benchmarks in report.json."), std::string::npos) << text;
  std::ostringstream all;
  write_google_benchmark_markdown(all, outputs);
  EXPECT_NE(all.str().find("| `c\\|d` | - | - | error: SKIPPED: no GPU |"), std::string::npos)
      << all.str();
  std::ostringstream none;
  write_google_benchmark_markdown(none, {});
  EXPECT_EQ(none.str(), "");
}

}  // namespace
}  // namespace kgate
