// Text that came from untrusted input (a package's keys, values, sources, its compiler log, a
// worker's output) on its way to a terminal or a CI log. It must not be able to:
//   - run GitHub Actions workflow commands (a line starting with "::", such as ::add-mask:: or
//     ::stop-commands::), or move the cursor and recolour the log (ANSI escape sequences);
//   - hide what follows it (a NUL), or break a JSON or XML writer (invalid UTF-8);
//   - flood the log (a 300 KB manifest once gave 480 MB of messages).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kgate {

/// `s` as a double-quoted string: control characters escaped as in JSON (\n, \u001b, \u0000, ...),
/// bytes that are not UTF-8 as \xNN, and cut to at most `max_bytes` of content with the length said
/// ("...(40000 bytes)"). Never throws.
std::string quote_untrusted(std::string_view s, std::size_t max_bytes = 200);

/// Like quote_untrusted, without the quotes (and without escaping them): for a name inside a line.
std::string inline_untrusted(std::string_view s, std::size_t max_bytes = 200);

/// Valid UTF-8 with every invalid byte written as \xNN; other bytes unchanged.
std::string valid_utf8(std::string_view s);

/// Multi-line text made safe to print: control characters other than newline and tab escaped
/// (\u001b, ...), invalid UTF-8 as \xNN, every line whose first non-blank characters are "::"
/// prefixed with "| " (so that no workflow command runs), and, past `max_bytes`, the first three
/// quarters and the last quarter kept with the number of dropped bytes said in between.
std::string safe_log_text(std::string_view text, std::size_t max_bytes = 64 * 1024);

/// The items with `sep` between them (a message's list); past `max_items`, "... (N in all)" stands
/// for the rest.
std::string join(const std::vector<std::string>& items, std::string_view sep = ", ",
                 std::size_t max_items = static_cast<std::size_t>(-1));

}  // namespace kgate
