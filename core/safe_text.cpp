// Untrusted text on its way to a log (see the header).
#include "core/safe_text.hpp"

#include <cstdint>
#include <cstdio>

namespace kgate {

namespace {

/// Length of the valid UTF-8 sequence at s[i], or 0 when the bytes there are not one.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  std::size_t n = 0;
  uint32_t cp = 0;
  if (c < 0x80) return 1;
  if ((c & 0xe0) == 0xc0) n = 2, cp = c & 0x1f;
  else if ((c & 0xf0) == 0xe0) n = 3, cp = c & 0x0f;
  else if ((c & 0xf8) == 0xf0) n = 4, cp = c & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3f);
  }
  // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
      (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
    return 0;
  return n;
}

std::string hex_byte(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", c);
  return buf;
}

std::string escape_control(unsigned char c) {
  switch (c) {
    case '\n':
      return "\\n";
    case '\t':
      return "\\t";
    case '\r':
      return "\\r";
    default:
      break;
  }
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\u%04x", c);
  return buf;
}

/// Appends s[i..] escaped as `quote` wants (keep_newlines: log text), returning the next index.
std::size_t append_escaped(std::string& out, std::string_view s, std::size_t i, bool in_quotes,
                           bool keep_newlines) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x20 || c == 0x7f) {
    if (keep_newlines && (c == '\n' || c == '\t')) out += static_cast<char>(c);
    else out += escape_control(c);
    return i + 1;
  }
  if (c < 0x80) {
    if (in_quotes && (c == '"' || c == '\\')) out += '\\';
    out += static_cast<char>(c);
    return i + 1;
  }
  const std::size_t n = utf8_length(s, i);
  if (n == 0) {
    out += hex_byte(c);
    return i + 1;
  }
  // C1 controls (U+0080..U+009F) act like ESC on some terminals.
  if (n == 2 && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(s[i + 1]));
    out += buf;
    return i + n;
  }
  out.append(s.substr(i, n));
  return i + n;
}

}  // namespace

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_length(s, i);
    if (n == 0) {
      out += hex_byte(static_cast<unsigned char>(s[i]));
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string quote_untrusted(std::string_view s, std::size_t max_bytes) {
  std::string out = "\"";
  std::size_t i = 0;
  while (i < s.size() && i < max_bytes) i = append_escaped(out, s, i, true, false);
  out += '"';
  if (i < s.size()) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out;
}

std::string inline_untrusted(std::string_view s, std::size_t max_bytes) {
  std::string out;
  std::size_t i = 0;
  while (i < s.size() && i < max_bytes) i = append_escaped(out, s, i, false, false);
  if (i < s.size()) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out;
}

std::string safe_log_text(std::string_view text, std::size_t max_bytes) {
  std::string_view head = text, tail;
  std::size_t dropped = 0;
  if (text.size() > max_bytes) {
    head = text.substr(0, max_bytes * 3 / 4);
    tail = text.substr(text.size() - max_bytes / 4);
    dropped = text.size() - head.size() - tail.size();
  }
  std::string out;
  const auto emit = [&](std::string_view part) {
    bool line_start = true;
    for (std::size_t i = 0; i < part.size();) {
      if (line_start) {
        std::size_t j = i;
        while (j < part.size() && (part[j] == ' ' || part[j] == '\t')) ++j;
        if (part.substr(j, 2) == "::") out += "| ";
        line_start = false;
      }
      if (part[i] == '\n') line_start = true;
      i = append_escaped(out, part, i, false, true);
    }
  };
  emit(head);
  if (dropped) {
    out += "\n[... " + std::to_string(dropped) + " bytes dropped ...]\n";
    emit(tail);
  }
  return out;
}

std::string join(const std::vector<std::string>& items, std::string_view sep,
                 std::size_t max_items) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < max_items; ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  if (items.size() > max_items)
    out += std::string(sep) + "... (" + std::to_string(items.size()) + " in all)";
  return out;
}

}  // namespace kgate
