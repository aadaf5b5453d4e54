// Google Benchmark JSON output kept in the report: reading, checking, embedding, Markdown table.
#include "core/google_benchmark.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <utility>

#include "core/error.hpp"
#include "core/format.hpp"

namespace kgate {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const char* const kHint =
    " (--benchmark-json takes the file Google Benchmark writes with --benchmark_out=FILE "
    "--benchmark_out_format=json)";

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw_usage(file + ": " + what + kHint);
}

// Google Benchmark writes a non-finite double as a bare NaN or Infinity (not JSON). Outside strings
// those are the only letters besides true/false/null, so they are safe to quote in the report's own
// spelling of non-finite numbers.
std::string quote_non_finite(const std::string& text) {
  static const std::pair<std::string, std::string> kTokens[] = {
      {"-Infinity", "\"-inf\""}, {"Infinity", "\"inf\""}, {"-NaN", "\"nan\""}, {"NaN", "\"nan\""}};
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    bool quoted = false;
    for (const auto& [token, spelled] : kTokens)
      if (text.compare(i, token.size(), token) == 0) {
        out += spelled;
        i += token.size() - 1;
        quoted = true;
        break;
      }
    if (!quoted) out += c;
  }
  return out;
}

const char* json_type(const json& j) {
  if (j.is_array()) return "an array";
  if (j.is_string()) return "a string";
  if (j.is_number()) return "a number";
  if (j.is_boolean()) return "a boolean";
  if (j.is_null()) return "null";
  return "an object";
}

double time_of(const json& entry, const char* key) {
  const auto it = entry.find(key);
  if (it == entry.end()) return std::nan("");
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {
    const auto s = it->get<std::string>();
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
  }
  return std::nan("");
}

std::string string_of(const json& entry, const char* key) {
  const auto it = entry.find(key);
  return it != entry.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// Why an entry produced no time (SkipWithError; "skipped" in newer Google Benchmark), or "".
std::string skip_reason(const json& entry) {
  const bool error = entry.value("error_occurred", false);
  const auto skipped = entry.find("skipped");
  const bool skip =
      skipped != entry.end() && ((skipped->is_boolean() && skipped->get<bool>()) ||
                                 (skipped->is_number() && skipped->get<double>() != 0));
  if (!error && !skip) return "";
  std::string why = string_of(entry, "error_message");
  if (why.empty()) why = string_of(entry, "skip_message");
  return why.empty() ? "skipped" : why;
}

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out;
}

std::string time_text(double v, const std::string& unit) {
  if (std::isnan(v)) return "-";
  return format_number(v, "%.4g") + (unit.empty() ? "" : " " + unit);
}

double median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Every entry of one run name: its repetitions and Google Benchmark's median over them.
struct RunGroup {
  std::string name;
  const json* median = nullptr;
  std::vector<const json*> repetitions;
  std::string error;
};

}  // namespace

GoogleBenchmarkOutput parse_google_benchmark_json(const std::string& text,
                                                  const std::string& file) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    fail(file, "is empty (did the benchmark run finish?)");
  const std::string quoted = quote_non_finite(text);
  json j;
  try {
    j = json::parse(quoted);
  } catch (const json::parse_error& e) {
    const size_t at = std::min<size_t>(e.byte > 0 ? e.byte - 1 : 0, quoted.size());
    const auto line =
        1 + std::count(quoted.begin(), quoted.begin() + static_cast<std::ptrdiff_t>(at), '\n');
    fail(file, "not valid JSON (parse error on line " + std::to_string(line) + ")");
  }
  if (!j.is_object())
    fail(file, std::string("not Google Benchmark JSON output: the top level is ") + json_type(j) +
                   ", expected an object with \"context\" and \"benchmarks\"");
  if (!j.contains("benchmarks") || !j.at("benchmarks").is_array())
    fail(file, "not Google Benchmark JSON output: no \"benchmarks\" array at the top level");
  if (!j.contains("context") || !j.at("context").is_object())
    fail(file, "not Google Benchmark JSON output: no \"context\" object at the top level");
  const auto& benchmarks = j.at("benchmarks");
  for (size_t i = 0; i < benchmarks.size(); ++i)
    if (!benchmarks[i].is_object() || !benchmarks[i].contains("name") ||
        !benchmarks[i].at("name").is_string())
      fail(file, "benchmarks[" + std::to_string(i) + "] has no \"name\" string");
  GoogleBenchmarkOutput out;
  out.file = file;
  out.context = j.at("context");
  out.benchmarks = benchmarks;
  return out;
}

GoogleBenchmarkOutput read_google_benchmark_json(const std::string& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) fail(path, "no such file");
  if (fs::is_directory(status)) fail(path, "is a directory, not a file");
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path, "cannot be read (check its permissions)");
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) fail(path, "cannot be read (an I/O error)");
  return parse_google_benchmark_json(text, path);
}

nlohmann::json to_json(const GoogleBenchmarkOutput& output) {
  return {{"file", output.file}, {"context", output.context}, {"benchmarks", output.benchmarks}};
}

GoogleBenchmarkOutput google_benchmark_from_json(const nlohmann::json& j) {
  GoogleBenchmarkOutput out;
  if (!j.is_object()) return out;
  out.file = string_of(j, "file");
  if (j.contains("context") && j.at("context").is_object()) out.context = j.at("context");
  if (j.contains("benchmarks") && j.at("benchmarks").is_array())
    out.benchmarks = j.at("benchmarks");
  return out;
}

void write_google_benchmark_markdown(std::ostream& os,
                                     const std::vector<GoogleBenchmarkOutput>& outputs,
                                     size_t max_rows) {
  if (outputs.empty()) return;
  // Group by run name in first-seen order: random interleaving scatters a benchmark's repetitions.
  std::vector<RunGroup> groups;
  size_t entries = 0;
  for (const auto& output : outputs) {
    std::map<std::string, size_t> index;
    for (const auto& entry : output.benchmarks) {
      if (!entry.is_object()) continue;
      ++entries;
      std::string name = string_of(entry, "run_name");
      if (name.empty()) name = string_of(entry, "name");
      auto [it, added] = index.emplace(name, groups.size());
      if (added) groups.push_back({name, nullptr, {}, ""});
      RunGroup& g = groups[it->second];
      if (string_of(entry, "run_type") == "aggregate") {
        if (string_of(entry, "aggregate_name") == "median") g.median = &entry;
      } else if (const auto why = skip_reason(entry); !why.empty()) {
        if (g.error.empty()) g.error = why;
      } else {
        g.repetitions.push_back(&entry);
      }
    }
  }
  os << "\n### Google Benchmark\n\n"
     << groups.size() << " benchmarks (" << entries << " entries) from ";
  for (size_t i = 0; i < outputs.size(); ++i)
    os << (i ? ", `" : "`") << md_cell(outputs[i].file) << "`";
  os << "; every entry is in report.json. Informational: the speed gate decides from its own "
        "interleaved blocks.\n\n";
  os << "| benchmark | real / manual time | cpu time | statistic |\n|---|---|---|---|\n";
  for (size_t i = 0; i < groups.size() && i < max_rows; ++i) {
    const RunGroup& g = groups[i];
    std::string real = "-", cpu = "-", statistic;
    if (g.median) {
      const auto unit = string_of(*g.median, "time_unit");
      real = time_text(time_of(*g.median, "real_time"), unit);
      cpu = time_text(time_of(*g.median, "cpu_time"), unit);
      statistic = "median of " + std::to_string(g.median->value("repetitions", int64_t{0}));
    } else if (!g.repetitions.empty()) {
      std::vector<double> reals, cpus;
      for (const auto* e : g.repetitions) {
        reals.push_back(time_of(*e, "real_time"));
        cpus.push_back(time_of(*e, "cpu_time"));
      }
      const auto unit = string_of(*g.repetitions.front(), "time_unit");
      real = time_text(median(reals), unit);
      cpu = time_text(median(cpus), unit);
      statistic = g.repetitions.size() == 1
                      ? "1 run"
                      : "median of " + std::to_string(g.repetitions.size()) + " runs";
    } else {
      statistic = "error: " + g.error;
    }
    const bool manual =
        g.name.size() >= 12 && g.name.compare(g.name.size() - 12, 12, "/manual_time") == 0;
    os << "| `" << md_cell(g.name) << "` | " << real << (manual && real != "-" ? " (manual)" : "")
       << " | " << cpu << " | " << md_cell(statistic) << " |\n";
  }
  if (groups.size() > max_rows)
    os << "\n" << groups.size() - max_rows << " more benchmarks in report.json.\n";
}

}  // namespace kgate
