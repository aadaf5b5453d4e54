#include "core/anonymous_names.hpp"

#include <cctype>
#include <cstdint>

namespace kgate {
namespace {

constexpr std::string_view kAnonymousNamespace = "_GLOBAL__N__";

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// True when bytes[at, at + 8) are lowercase hex digits.
bool hex8_at(const std::string& bytes, size_t at) {
  if (at + 8 > bytes.size()) return false;
  for (size_t i = at; i < at + 8; ++i)
    if (!is_hex(bytes[i])) return false;
  return true;
}

void zero8(std::string& bytes, size_t at) { bytes.replace(at, 8, 8, '0'); }

}  // namespace

void normalize_anonymous_names(std::string& bytes) {
  for (size_t at = bytes.find(kAnonymousNamespace); at != std::string::npos;
       at = bytes.find(kAnonymousNamespace, at + 1)) {
    const size_t hash = at + kAnonymousNamespace.size();
    if (!hex8_at(bytes, hash)) continue;
    zero8(bytes, hash);
    // Where the name ends: a mangled source name says its length before it ("34_GLOBAL__N__...").
    size_t digits = at;
    while (digits > 0 && std::isdigit(static_cast<unsigned char>(bytes[digits - 1])) &&
           at - digits < 6)
      --digits;
    size_t end = std::string::npos;
    if (digits < at) {
      const uint64_t length = std::stoull(bytes.substr(digits, at - digits));
      if (length >= kAnonymousNamespace.size() + 8 && at + length <= bytes.size())
        end = at + length;
    } else {
      // Else "_<len>_<file>" after the hash, then the tail up to a character no name holds.
      size_t p = hash + 8;
      if (p < bytes.size() && bytes[p] == '_') {
        size_t q = p + 1;
        while (q < bytes.size() && std::isdigit(static_cast<unsigned char>(bytes[q]))) ++q;
        if (q > p + 1 && q < bytes.size() && bytes[q] == '_') {
          const uint64_t file = std::stoull(bytes.substr(p + 1, q - p - 1));
          size_t e = q + 1 + file;
          while (e < bytes.size() && is_name_char(bytes[e])) ++e;
          end = e;
        }
      }
    }
    if (end == std::string::npos) continue;
    // A tail of "_<8 hex>_<digits>" (a file with no external symbol to name the namespace after:
    // the digits change with every compile, in one directory too): both zeroed.
    size_t tail = end;
    while (tail > hash + 8 && std::isdigit(static_cast<unsigned char>(bytes[tail - 1])) &&
           end - tail < 10)
      --tail;
    if (tail < end && tail >= hash + 8 + 10 && bytes[tail - 1] == '_' && bytes[tail - 10] == '_' &&
        hex8_at(bytes, tail - 9)) {
      zero8(bytes, tail - 9);
      bytes.replace(tail, end - tail, end - tail, '0');
    } else if (end >= hash + 8 + 9 && bytes[end - 9] == '_' && hex8_at(bytes, end - 8)) {
      zero8(bytes, end - 8);
    }
  }
}

std::string normalized_anonymous_names(std::string_view bytes) {
  std::string out(bytes);
  normalize_anonymous_names(out);
  return out;
}

}  // namespace kgate
