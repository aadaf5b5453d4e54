// Output helpers of the kgate verbs.
#include "cli/output.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <ctime>
#include <fstream>

#include "core/error.hpp"

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
    if (!f) throw_usage("cannot write " + tmp.string() + ": check that --out is a writable directory");
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

nlohmann::ordered_json run_meta(const std::string& command, Backend backend, const RunnerEnvironment& env,
                                uint64_t seed) {
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

Progress::Progress(bool quiet) : quiet_(quiet), tty_(isatty(fileno(stderr)) != 0) {}

void Progress::operator()(const std::string& line) const {
  if (quiet_) return;
  if (tty_)
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
  else
    std::fprintf(stderr, "%s\n", line.c_str());
}

void Progress::end_line() const {
  if (tty_ && !quiet_) std::fprintf(stderr, "\n");
}

}  // namespace kgate::cli
