// The texts every writer of a run's report shares, so that one figure reads the same everywhere.
#include "report/text.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "core/format.hpp"

namespace kgate {

void printf_to(std::ostream& os, const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string text(n > 0 ? static_cast<size_t>(n) + 1 : 1, '\0');
  std::vsnprintf(text.data(), text.size(), format, again);
  va_end(again);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  os << text;
}

std::string speed_words(double ratio) {
  if (!std::isfinite(ratio) || ratio <= 0) return "-";
  if (std::fabs(ratio - 1.0) < 5e-4) return "same speed";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3fx %s", ratio < 1 ? 1.0 / ratio : ratio,
                ratio < 1 ? "faster" : "slower");
  return buf;
}

std::string speedup_words(double speedup) {
  return std::isfinite(speedup) && speedup > 0 ? speed_words(1.0 / speedup) : "-";
}

std::string correctness_cell(const KernelReport& k) {
  const CorrectnessReport& c = k.correctness;
  if (k.outcome == Outcome::skipped) return "skipped";
  if (k.outcome == Outcome::unchecked)
    return c.cases == 0 ? "UNCHECKED, no case"
                        : "UNCHECKED, " + std::to_string(c.fallback) + "/" +
                              std::to_string(c.cases) + " fell back";
  if (c.failed > 0) return "failed " + std::to_string(c.failed) + " of " + std::to_string(c.cases);
  if (k.outcome == Outcome::failed)  // a crash, a hang or a fault outside the cases
    return c.cases == 0
               ? "failed, no case ran"
               : "failed after " + std::to_string(c.passed) + "/" + std::to_string(c.cases);
  const char* word = c.reference_errors > 0 ? "invalid" : "passed";
  return std::string(word) + " " + std::to_string(c.passed) + "/" + std::to_string(c.cases) +
         (c.skipped > 0 ? ", " + std::to_string(c.skipped) + " skipped" : "");
}

std::string markup_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;  // &apos; is not HTML 4; &#39; is valid in both
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') out += ' ';
        else out += c;
    }
  }
  return out;
}

std::string annotation_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '%') out += "%25";
    else if (c == '\r') out += "%0D";
    else if (c == '\n') out += "%0A";
    else out += c;
  }
  return out;
}

std::string speed_summary(const SpeedComparison& s) {
  // Not timed: no figures to state, the note says why.
  if (s.decision == Outcome::unchanged || s.decision == Outcome::skipped)
    return std::string(outcome_name(s.decision)) + " vs " + s.baseline + ": " + s.note;
  return speed_words(s.ratio) + " than " + s.baseline + " (time ratio " +
         format_number(s.ratio, "%.3f") + " [" + format_number(s.ratio_lower, "%.3f") + ", " +
         format_number(s.ratio_upper, "%.3f") + "]), " + std::to_string(s.blocks) + " blocks, " +
         outcome_name(s.decision);
}

bool is_failure(Outcome o) {
  return o == Outcome::failed || o == Outcome::regressed || o == Outcome::invalid;
}

bool inconclusive_fails(const RunReport& report) {
  const auto& c = report.meta.config;
  return c.is_object() && c.contains("inconclusive_fails") &&
         c.at("inconclusive_fails").is_boolean() && c.at("inconclusive_fails").get<bool>();
}

const char* const kNotFailing = "does not fail the gate without --inconclusive-fails";

std::string case_words(const SpeedComparison& s) {
  return s.kcase.op.empty() ? std::string("(every case)") : s.kcase.id();
}

std::string base_name(const RunReport& report) {
  const auto& b = report.meta.base;
  if (!b.is_object()) return "";
  const std::string ref = b.value("ref", std::string()), sha = b.value("sha", std::string());
  return !ref.empty() ? ref : !sha.empty() ? sha.substr(0, 12) : std::string("base");
}

std::string baseline_label(const KernelReport& k, const std::string& baseline,
                           const std::string& base) {
  const bool the_base = !base.empty() && k.base.is_object() && baseline == k.baseline;
  return the_base ? baseline + "@" + base : baseline;
}

std::string base_cell(const KernelReport& k, const std::string& base) {
  if (!k.base.is_object()) return "-";
  const std::string status = k.base.value("status", std::string());
  if (status == "new") return "new (no base)";
  if (status == "unchanged") return "UNCHANGED";
  if (status == "base_failed") return "INVALID (the base fails its cases)";
  const SpeedComparison* worst = nullptr;
  for (const auto& s : k.speed)
    if (s.baseline == k.baseline && s.blocks > 0 && (!worst || s.ratio > worst->ratio)) worst = &s;
  if (!worst) return "not timed";
  std::string decision = outcome_name(worst->decision);
  for (auto& c : decision) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return decision + " " + format_number(worst->ratio, "x%.3f") + " vs " +
         baseline_label(k, k.baseline, base);
}

std::vector<const SpeedComparison*> base_first(const KernelReport& k) {
  std::vector<const SpeedComparison*> out;
  for (const auto& s : k.speed)
    if (s.baseline != "eager") out.push_back(&s);
  for (const auto& s : k.speed)
    if (s.baseline == "eager") out.push_back(&s);
  return out;
}

std::vector<const SpeedComparison*> eager_comparisons(const KernelReport& k) {
  std::vector<const SpeedComparison*> out;
  for (const auto& s : k.speed)
    if (s.baseline == "eager") out.push_back(&s);
  if (out.empty())
    for (const auto& s : k.speed) out.push_back(&s);
  return out;
}

std::vector<size_t> column_widths(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], row[i].size());
    }
  return widths;
}

std::string aligned_row(const std::vector<std::string>& row, const std::vector<size_t>& widths) {
  std::string line;
  for (size_t i = 0; i < row.size(); ++i) {
    line += row[i];
    if (i + 1 < row.size())
      line += std::string((i < widths.size() ? widths[i] : 0) - row[i].size() + 1, ' ');
  }
  return line;
}

}  // namespace kgate
