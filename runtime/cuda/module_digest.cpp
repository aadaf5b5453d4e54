#include "runtime/cuda/module_digest.hpp"

#include <dlfcn.h>
#include <elf.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <vector>

#include "core/anonymous_names.hpp"
#include "core/sha256.hpp"
#include "runtime/cuda/cubin_digest.hpp"

namespace kgate::cuda {
namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr unsigned char kZstdMagic[4] = {0x28, 0xB5, 0x2F, 0xFD};

template <typename T>
T read_at(std::string_view s, size_t at) {
  T v{};
  std::memcpy(&v, s.data() + at, sizeof v);
  return v;
}

// libzstd, loaded once where it exists (the fatbinaries of CUDA 13 compress PTX with it).
struct Zstd {
  size_t (*decompress)(void*, size_t, const void*, size_t) = nullptr;
  size_t (*frame_size)(const void*, size_t) = nullptr;
  unsigned long long (*content_size)(const void*, size_t) = nullptr;
  unsigned (*is_error)(size_t) = nullptr;
};

const Zstd& zstd() {
  static const Zstd z = [] {
    Zstd z;
    void* h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return z;
    z.decompress = reinterpret_cast<decltype(z.decompress)>(dlsym(h, "ZSTD_decompress"));
    z.frame_size =
        reinterpret_cast<decltype(z.frame_size)>(dlsym(h, "ZSTD_findFrameCompressedSize"));
    z.content_size =
        reinterpret_cast<decltype(z.content_size)>(dlsym(h, "ZSTD_getFrameContentSize"));
    z.is_error = reinterpret_cast<decltype(z.is_error)>(dlsym(h, "ZSTD_isError"));
    if (!z.decompress || !z.frame_size || !z.content_size || !z.is_error) z = Zstd{};
    return z;
  }();
  return z;
}

// The payload's zstd frame decompressed; false where it cannot be (no libzstd, not zstd, a frame
// that does not say its size or says more than 2 GiB).
bool decompress(std::string_view payload, std::string& out) {
  const Zstd& z = zstd();
  if (!z.decompress || payload.size() < 4 || std::memcmp(payload.data(), kZstdMagic, 4) != 0)
    return false;
  const size_t frame = z.frame_size(payload.data(), payload.size());
  if (z.is_error(frame)) return false;
  const unsigned long long size = z.content_size(payload.data(), frame);
  if (size == 0 || size > (1ull << 31)) return false;  // (also ZSTD_CONTENTSIZE_UNKNOWN / _ERROR)
  out.resize(size);
  const size_t n = z.decompress(out.data(), out.size(), payload.data(), frame);
  return !z.is_error(n) && n == size;
}

}  // namespace

std::string canonical_ptx(std::string text) {
  normalize_anonymous_names(text);
  const auto braces = [](std::string_view t) {
    int n = 0;
    for (char c : t) n += c == '{' ? 1 : c == '}' ? -1 : 0;
    return n;
  };
  std::string out;
  std::istringstream in(text);
  std::string line;
  bool in_debug = false;  // inside a `.section .debug_*` block (its brace may open on a later line)
  int depth = 0;
  while (std::getline(in, line)) {
    const size_t first = line.find_first_not_of(" \t");
    const std::string_view t =
        first == std::string::npos ? std::string_view() : std::string_view(line).substr(first);
    const bool opens =
        !in_debug && t.rfind(".section", 0) == 0 && t.find(".debug_") != std::string_view::npos;
    if (in_debug || opens) {
      depth = (opens ? 0 : depth) + braces(t);
      in_debug = !(depth <= 0 && t.find('}') != std::string_view::npos);
      continue;
    }
    if (t.rfind(".file", 0) == 0 || t.rfind(".loc", 0) == 0) continue;
    out += line;
    out += '\n';
  }
  return out;
}

namespace {

// One entry's payload, canonical: a CUBIN by its functions' digests, PTX by its text.
std::string canonical_payload(std::string_view payload) {
  if (payload.size() >= 4 && std::memcmp(payload.data(), ELFMAG, SELFMAG) == 0) {
    const CubinFunctions f = cubin_function_digests(normalized_anonymous_names(payload));
    if (f.error.empty()) {
      std::string out = "cubin\n";
      for (const auto& [name, digest] : f.digests) out += name + " " + digest + "\n";
      return out;
    }
    return normalized_anonymous_names(payload);
  }
  // PTX (text, NUL-padded).
  std::string_view text = payload.substr(0, payload.find('\0'));
  return "ptx\n" + canonical_ptx(std::string(text));
}

// An entry's header less what names the build rather than the code: its own size and the
// payload's sizes (payload, compressed, uncompressed: a PTX whose .file lines name another
// directory is longer), which the canonical payload stands for, and the identifier nvcc writes
// after the fixed fields, at the offset and of the length that the words at 32 and 36 give: the
// path of the source it compiled ("/ws/build/k.package.cu" in one tree,
// "/ws/.kgate-pr/base/build/k.package.cu" in the other).
std::string canonical_entry_header(std::string_view raw) {
  std::string head(raw);
  const auto zero = [&](size_t at, size_t n) {
    if (at >= head.size()) return;
    n = std::min(n, head.size() - at);
    head.replace(at, n, n, '\0');
  };
  zero(4, 4);   // the header's size (the identifier is inside it)
  zero(8, 16);  // the payload's sizes, and where a PTX entry's options sit (after the identifier)
  if (head.size() >= 64) {
    zero(56, 8);
    const uint32_t offset = read_at<uint32_t>(head, 32);
    const uint32_t length = read_at<uint32_t>(head, 36);
    if (offset >= 64 && length > 0 && uint64_t{offset} + length <= head.size()) {
      // The identifier, the NUL padding after it, and the offset word of what follows (a PTX
      // entry's options, " --generate-line-info ", placed after the padded identifier).
      size_t end = offset + length;
      while (end < head.size() && head[end] == '\0') ++end;
      if (end + 8 <= head.size() && read_at<uint32_t>(head, end) == end + 8) zero(end, 4);
      head.erase(offset, end - offset);
      zero(36, 4);
    }
  }
  return head;
}

}  // namespace

std::string canonical_fatbin(std::string_view s) {
  std::string out;
  size_t at = 0;
  while (at + 16 <= s.size()) {
    if (read_at<uint32_t>(s, at) != kFatbinMagic) {
      if (s[at] == '\0') {  // padding between containers
        ++at;
        continue;
      }
      out += "raw\n" + normalized_anonymous_names(s.substr(at));
      return out;
    }
    const uint16_t header = read_at<uint16_t>(s, at + 6);
    const uint64_t size = read_at<uint64_t>(s, at + 8);
    if (header < 16 || at + header + size > s.size()) {
      out += "raw\n" + normalized_anonymous_names(s.substr(at));
      return out;
    }
    out += "fatbin\n";
    size_t e = at + header;
    const size_t end = at + header + size;
    while (e + 16 <= end) {
      const uint32_t entry_header = read_at<uint32_t>(s, e + 4);
      const uint64_t payload_size = read_at<uint64_t>(s, e + 8);
      if (entry_header < 16 || e + entry_header + payload_size > end) {
        out += "raw\n" + normalized_anonymous_names(s.substr(e, end - e));
        break;
      }
      // The header less its sizes (payload, compressed, uncompressed: a PTX whose .file lines name
      // another directory is longer), which the canonical payload stands for.
      const std::string head = canonical_entry_header(s.substr(e, entry_header));
      const std::string_view payload = s.substr(e + entry_header, payload_size);
      std::string plain;
      const bool compressed = entry_header >= 20 && payload.size() >= 4 &&
                              std::memcmp(payload.data(), kZstdMagic, 4) == 0;
      if (compressed && decompress(payload, plain)) {
        out += "entry\n" + head + canonical_payload(plain);
      } else if (compressed) {
        out += "entry\n" + head + std::string(payload);  // unreadable here: as it is
      } else {
        out += "entry\n" + head + canonical_payload(payload);
      }
      e += entry_header + payload_size;
    }
    at = end;
  }
  if (at < s.size()) out += "tail\n" + std::string(s.substr(at));
  return out;
}

namespace {

/// Calls `visit(name, contents)` for each section of the ELF file at `path` that has contents, in
/// file order; false when the file is no 64-bit ELF object (nothing visited).
bool for_each_section(const std::string& path,
                      const std::function<void(const std::string&, std::string_view)>& visit) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string bytes = buffer.str();
  if (bytes.size() < sizeof(Elf64_Ehdr) || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0)
    return false;
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
      eh.e_shoff + static_cast<uint64_t>(eh.e_shnum) * sizeof(Elf64_Shdr) > bytes.size() ||
      eh.e_shstrndx >= eh.e_shnum)
    return false;
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  std::memcpy(sections.data(), bytes.data() + eh.e_shoff, eh.e_shnum * sizeof(Elf64_Shdr));
  const Elf64_Shdr& names = sections[eh.e_shstrndx];
  if (names.sh_offset + names.sh_size > bytes.size()) return false;
  for (const auto& s : sections) {
    if (s.sh_name >= names.sh_size || s.sh_type == SHT_NOBITS) continue;
    const char* name = bytes.data() + names.sh_offset + s.sh_name;
    const std::string section(name, strnlen(name, names.sh_size - s.sh_name));
    if (s.sh_offset + s.sh_size > bytes.size()) continue;
    visit(section, std::string_view(bytes.data() + s.sh_offset, s.sh_size));
  }
  return true;
}

}  // namespace

std::vector<std::string> embedded_source_paths(const std::string& path) {
  std::vector<std::string> out;
  for_each_section(path, [&](const std::string& section, std::string_view contents) {
    if (section != ".rodata") return;
    static const char* const kSuffixes[] = {".cpp", ".cc", ".cxx", ".cu",
                                            ".c",   ".h",  ".hpp", ".cuh"};
    size_t at = 0;
    while (at < contents.size()) {
      const size_t end = std::min(contents.find('\0', at), contents.size());
      const std::string_view text = contents.substr(at, end - at);
      if (text.size() > 3 && text[0] == '/' && text.find('\n') == std::string_view::npos)
        for (const char* suffix : kSuffixes) {
          const size_t n = std::strlen(suffix);
          if (text.size() > n && text.substr(text.size() - n) == suffix) {
            out.emplace_back(text);
            break;
          }
        }
      at = end + 1;
    }
  });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string module_code_digest(const std::string& path) {
  static const std::set<std::string> code = {".text", ".rodata", ".data", ".data.rel.ro",
                                             ".nv_fatbin"};
  Sha256 h;
  h.field("kgate-module-code/2");
  const bool elf =
      for_each_section(path, [&](const std::string& section, std::string_view contents) {
        if (!code.count(section)) return;
        h.field(section);
        h.field(section == ".nv_fatbin" ? canonical_fatbin(contents)
                                        : normalized_anonymous_names(contents));
      });
  return elf ? h.hex() : "";
}

}  // namespace kgate::cuda
