// compute-sanitizer: where it is, and what its output says.
#include "cli/sanitize.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

namespace kgate::cli {

const std::vector<std::string>& sanitizer_tools() {
  static const std::vector<std::string> tools = {"memcheck", "racecheck", "synccheck", "initcheck"};
  return tools;
}

std::optional<std::string> find_compute_sanitizer(std::string* looked) {
  std::vector<std::string> candidates;
  if (const char* v = std::getenv("KGATE_COMPUTE_SANITIZER"); v && *v) candidates.push_back(v);
  if (const char* v = std::getenv("CUDA_HOME"); v && *v)
    candidates.push_back(std::string(v) + "/bin/compute-sanitizer");
  candidates.push_back("/usr/local/cuda/bin/compute-sanitizer");
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    for (size_t at = 0; at <= p.size();) {
      const size_t colon = std::min(p.find(':', at), p.size());
      if (colon > at && p[at] == '/')
        candidates.push_back(p.substr(at, colon - at) + "/compute-sanitizer");
      at = colon + 1;
    }
  }
  for (const auto& c : candidates)
    if (access(c.c_str(), X_OK) == 0) return c;
  if (looked) {
    std::string s;
    for (size_t i = 0; i < candidates.size() && i < 4; ++i) s += (i ? ", " : "") + candidates[i];
    *looked = s + (candidates.size() > 4 ? " and PATH" : "");
  }
  return std::nullopt;
}

namespace {

constexpr const char* kPrefix = "========= ";

// The count before `word` in "... SUMMARY: 3 errors" (or "1 error"); -1 when there is none.
int64_t count_after(const std::string& line, const std::string& marker) {
  const size_t at = line.find(marker);
  if (at == std::string::npos) return -1;
  size_t i = at + marker.size();
  while (i < line.size() && line[i] == ' ') ++i;
  int64_t n = 0;
  bool any = false;
  for (; i < line.size() && line[i] >= '0' && line[i] <= '9' && n < (int64_t{1} << 50); ++i) {
    n = n * 10 + (line[i] - '0');
    any = true;
  }
  return any ? n : -1;
}

}  // namespace

SanitizerFindings parse_sanitizer_output(const std::string& text) {
  SanitizerFindings f;
  std::istringstream in(text);
  std::string line, last;
  bool in_finding = false;
  int findings = 0;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) last = line;
    const size_t at = line.find(kPrefix);
    if (at == std::string::npos) continue;
    const std::string body = line.substr(at + std::string(kPrefix).size());
    if (const int64_t n = count_after(body, "ERROR SUMMARY:"); n >= 0) {
      f.completed = true;
      f.errors = std::max(f.errors, n);
      in_finding = false;
      continue;
    }
    if (body.find("RACECHECK SUMMARY:") != std::string::npos) {
      f.completed = true;
      // "N hazards displayed (E errors, W warnings)": the errors count.
      if (const int64_t e = count_after(body, "("); e >= 0) f.errors = std::max(f.errors, e);
      in_finding = false;
      continue;
    }
    if (body.rfind("COMPUTE-SANITIZER", 0) == 0) continue;  // its banner
    const bool indented = !body.empty() && body[0] == ' ';
    if (!indented) {
      in_finding = true;
      ++findings;
    }
    // The first two findings: their headline and the lines under it that say where.
    if (in_finding && findings <= 2 && f.first.size() < 8) {
      const size_t s = body.find_first_not_of(' ');
      const std::string said = s == std::string::npos ? "" : body.substr(s, 240);
      if (!said.empty() && said.rfind("Saved host backtrace", 0) != 0 &&
          said.rfind("Host Frame", 0) != 0)
        f.first.push_back(said);
    }
  }
  if (!f.completed) f.reason = last.empty() ? "it printed nothing" : last.substr(0, 300);
  return f;
}

std::vector<Case> sanitize_subset(const std::vector<Case>& cases, int64_t count) {
  std::vector<Case> out;
  std::set<std::string> ids;
  // Per family (in the order they come), its largest case of at most kSanitizeElements elements:
  // a one-element row exercises little of a kernel, and the sanitizer slows each launch a lot.
  std::vector<std::string> order;
  std::map<std::string, const Case*> pick;
  for (const auto& c : cases) {
    if (c.family == "huge") continue;
    auto [it, fresh] = pick.emplace(c.family, &c);
    if (fresh) order.push_back(c.family);
    const int64_t n = c.numel_hint(), have = it->second->numel_hint();
    if (!fresh && n <= kSanitizeElements && (have > kSanitizeElements || n > have)) it->second = &c;
  }
  for (const auto& f : order) {
    if (static_cast<int64_t>(out.size()) >= count) break;
    ids.insert(pick[f]->id());
    out.push_back(*pick[f]);
  }
  for (const auto& c : cases) {
    if (static_cast<int64_t>(out.size()) >= count) break;
    if (c.family == "huge" || ids.count(c.id())) continue;
    ids.insert(c.id());
    out.push_back(c);
  }
  return out;
}

}  // namespace kgate::cli
