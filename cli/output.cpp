// Output helpers of the kgate verbs.
#include "cli/output.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>

#include "core/error.hpp"
#include "gates/props/generators.hpp"

namespace kgate::cli {

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

void write_file_atomically(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp);
    if (!f)
      throw_usage("cannot write " + tmp.string() + ": check that --out is a writable directory");
    f << text;
    if (!f) throw_usage("writing " + tmp.string() + " failed (disk full?)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw_usage("cannot move " + tmp.string() + " to " + path.string() + ": " + ec.message());
}

nlohmann::ordered_json json_number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json();
}

nlohmann::ordered_json run_meta(const std::string& command, Backend backend,
                                const RunnerEnvironment& env, uint64_t seed) {
  return {{"kgate_version", KGATE_VERSION},
          {"command", command},
          {"backend", backend_name(backend)},
          {"device", env.device},
          {"driver", env.driver},
          {"cuda", env.cuda},
          {"torch", env.torch},
          {"started_at", now_utc()},
          {"seed", seed}};
}

CLI::Validator above_zero() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0') return "expected a number, found '" + text + "'";
        return v > 0 ? "" : "must be above 0, found " + text;
      },
      "> 0");
}

CLI::Validator finite_number(const std::string& what, std::function<bool(double)> accepts) {
  return CLI::Validator(
      [what, accepts = std::move(accepts)](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end == text.c_str() || *end != '\0' || !std::isfinite(v) || !accepts(v))
          return "expected a finite number " + what + ", found '" + text + "'";
        return "";
      },
      what);
}

CLI::Validator tolerance_value() {
  return finite_number(">= 0", [](double v) { return v >= 0; });
}

CLI::Validator delta_value() {
  return finite_number("> 0", [](double v) { return v > 0; });
}

CLI::Validator alpha_value() {
  return finite_number("in (0, 0.5)", [](double v) { return v > 0 && v < 0.5; });
}

CLI::Validator time_budget_value() {
  return finite_number(">= 0", [](double v) { return v >= 0; });
}

CLI::Validator timeout_value() {
  return finite_number("> 0", [](double v) { return v > 0; });
}

CLI::Validator fragile_margin_value() {
  return finite_number("in (0, 1]", [](double v) { return v > 0 && v <= 1; });
}

std::vector<std::string> check_families() {
  std::vector<std::string> families = props::all_families();
  families.push_back("huge");
  return families;
}

CLI::Option* add_name_list_option(CLI::App& cmd, const NameList& list,
                                  std::vector<std::string>& into, const std::string& help) {
  const std::vector<std::string> known = list.known;
  std::string expected;
  for (size_t i = 0; i < known.size(); ++i)
    expected += (i == 0 ? "" : i + 1 == known.size() ? " or " : ", ") + known[i];
  // Each value a name or a comma list: checked item by item here, split when the option is taken.
  const auto split = [](const std::string& text) {
    std::vector<std::string> items;
    size_t from = 0;
    for (size_t comma; (comma = text.find(',', from)) != std::string::npos; from = comma + 1)
      items.push_back(text.substr(from, comma - from));
    items.push_back(text.substr(from));
    return items;
  };
  const CLI::Validator names(
      [=](std::string& text) -> std::string {
        for (const auto& item : split(text)) {
          if (item.empty())
            return "an empty " + list.short_noun + " name in '" + text + "'; expected " + expected +
                   " (a comma list: " + list.example + ")";
          if (std::find(known.begin(), known.end(), item) == known.end())
            return "unknown " + list.noun + " '" + item + "'; expected " + expected;
        }
        return "";
      },
      "");
  CLI::Option* option = cmd.add_option_function<std::vector<std::string>>(
      list.flag,
      [&into, split](const std::vector<std::string>& values) {
        for (const auto& value : values)
          for (auto& item : split(value)) into.push_back(std::move(item));
      },
      help);
  if (!list.type_name.empty()) option->type_name(list.type_name);
  return option->check(names)->allow_extra_args(false);
}

CLI::Option* add_family_option(CLI::App& cmd, std::vector<std::string>& families,
                               const std::vector<std::string>& known, const std::string& help) {
  return add_name_list_option(
      cmd, {"--family", known, "family", "case family", "random,ragged", ""}, families, help);
}

Progress::Progress(bool quiet) : quiet_(quiet), tty_(isatty(fileno(stderr)) != 0) {}

void Progress::operator()(const std::string& line) const {
  if (quiet_) return;
  if (tty_) std::fprintf(stderr, "\r\033[K%s", line.c_str());
  else std::fprintf(stderr, "%s\n", line.c_str());
}

void Progress::end_line() const {
  if (tty_ && !quiet_) std::fprintf(stderr, "\n");
}

}  // namespace kgate::cli
