// Reading a compiled image's kernels on the host, without a GPU or driver: the function symbols of
// an ELF64 CUBIN, the parameter tables (.nv.info.NAME) nvcc and NVRTC leave in it, and the .entry
// names and parameters of a PTX text, and the images of a fatbin container.
#include "runtime/package/kernel_binary.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>

namespace kgate::package {

namespace {

uint64_t read_le(const std::string& img, std::size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(img[at + static_cast<std::size_t>(i)]);
  return v;
}

}  // namespace

std::optional<std::vector<std::string>> elf_function_names(const std::string& img) {
  if (img.size() < 64 ||
      img.compare(0, 4,
                  "\x7f"
                  "ELF") != 0 ||
      img[4] != 2 || img[5] != 1)
    return std::nullopt;
  const uint64_t shoff = read_le(img, 0x28, 8), shentsize = read_le(img, 0x3A, 2),
                 shnum = read_le(img, 0x3C, 2);
  if (shentsize < 64 || shoff > img.size() || shnum > (img.size() - shoff) / shentsize)
    return std::nullopt;
  const auto section = [&](uint64_t i, uint64_t field, int bytes) {
    return read_le(img, shoff + i * shentsize + field, bytes);
  };
  std::vector<std::string> names;
  for (uint64_t i = 0; i < shnum; ++i) {
    if (section(i, 0x04, 4) != 2) continue;  // SHT_SYMTAB
    const uint64_t off = section(i, 0x18, 8), size = section(i, 0x20, 8),
                   link = section(i, 0x28, 4);
    const uint64_t entsize = section(i, 0x38, 8);
    if (link >= shnum || entsize < 24 || off > img.size() || size > img.size() - off)
      return std::nullopt;
    const uint64_t str_off = section(link, 0x18, 8), str_size = section(link, 0x20, 8);
    if (str_off > img.size() || str_size > img.size() - str_off) return std::nullopt;
    for (uint64_t at = off; at + entsize <= off + size; at += entsize) {
      if ((static_cast<unsigned char>(img[at + 4]) & 0xf) != 2) continue;  // STT_FUNC
      const uint64_t name = read_le(img, at, 4);
      if (name >= str_size) continue;
      const std::size_t start = str_off + name;
      const std::size_t end = img.find('\0', start);
      if (end == std::string::npos || end > str_off + str_size) continue;
      names.push_back(img.substr(start, end - start));
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::optional<std::map<std::string, std::vector<KernelParam>>> cubin_kernel_params(
    const std::string& img) {
  if (img.size() < 64 ||
      img.compare(0, 4,
                  "\x7f"
                  "ELF") != 0 ||
      img[4] != 2 || img[5] != 1)
    return std::nullopt;
  const uint64_t shoff = read_le(img, 0x28, 8), shentsize = read_le(img, 0x3A, 2),
                 shnum = read_le(img, 0x3C, 2);
  const uint64_t shstrndx = read_le(img, 0x3E, 2);
  if (shentsize < 64 || shoff > img.size() || shnum > (img.size() - shoff) / shentsize ||
      shstrndx >= shnum)
    return std::nullopt;
  const auto section = [&](uint64_t i, uint64_t field, int bytes) {
    return read_le(img, shoff + i * shentsize + field, bytes);
  };
  const uint64_t names_off = section(shstrndx, 0x18, 8), names_size = section(shstrndx, 0x20, 8);
  if (names_off > img.size() || names_size > img.size() - names_off) return std::nullopt;
  std::map<std::string, std::vector<KernelParam>> out;
  const std::string prefix = ".nv.info.";
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint64_t name = section(i, 0x00, 4);
    if (name >= names_size) continue;
    const std::size_t end = img.find('\0', names_off + name);
    if (end == std::string::npos) continue;
    const std::string section_name = img.substr(names_off + name, end - names_off - name);
    if (section_name.rfind(prefix, 0) != 0) continue;
    const uint64_t off = section(i, 0x18, 8), size = section(i, 0x20, 8);
    if (off > img.size() || size > img.size() - off) return std::nullopt;
    // Records: format (1: no value, 2: a byte, 3: a half word; 4: a size-prefixed value) and
    // attribute. EIATTR_KPARAM_INFO (0x17, 12 bytes): index u32, ordinal u16, offset u16, flags u32
    // whose bits 18 and up hold the parameter's size in bytes.
    std::vector<KernelParam> params;
    for (uint64_t at = off; at + 4 <= off + size;) {
      const unsigned fmt = static_cast<unsigned char>(img[at]),
                     attr = static_cast<unsigned char>(img[at + 1]);
      if (fmt == 4) {
        const uint64_t len = read_le(img, at + 2, 2);
        if (at + 4 + len > off + size) break;
        if (attr == 0x17 && len >= 12) {
          KernelParam p;
          p.ordinal = static_cast<uint32_t>(read_le(img, at + 8, 2));
          p.offset = static_cast<uint32_t>(read_le(img, at + 10, 2));
          p.size = static_cast<uint32_t>(read_le(img, at + 12, 4) >> 18);
          params.push_back(p);
        }
        at += 4 + len;
      } else if (fmt >= 1 && fmt <= 3) {
        at += 4;
      } else {
        break;  // an unknown record: what was read so far stands
      }
    }
    std::sort(params.begin(), params.end(),
              [](const KernelParam& a, const KernelParam& b) { return a.ordinal < b.ordinal; });
    out[section_name.substr(prefix.size())] = std::move(params);
  }
  return out;
}

std::vector<KernelParam> ptx_kernel_params(const std::string& ptx, const std::string& kernel) {
  std::vector<KernelParam> params;
  const std::size_t entry = ptx.find(".entry " + kernel + "(");
  if (entry == std::string::npos) return params;
  const std::size_t close = ptx.find(')', entry);
  std::size_t at = ptx.find(".param", entry);
  uint32_t offset = 0;
  while (at != std::string::npos && at < close) {
    const std::size_t line_end = std::min(ptx.find_first_of(",)", at), close);
    const std::string decl = ptx.substr(at, line_end - at);
    uint32_t size = 0, align = 0;
    for (const auto& [type, bytes] : std::vector<std::pair<std::string, uint32_t>>{{".u64", 8},
                                                                                   {".s64", 8},
                                                                                   {".b64", 8},
                                                                                   {".f64", 8},
                                                                                   {".u32", 4},
                                                                                   {".s32", 4},
                                                                                   {".b32", 4},
                                                                                   {".f32", 4},
                                                                                   {".u16", 2},
                                                                                   {".s16", 2},
                                                                                   {".b16", 2},
                                                                                   {".f16", 2},
                                                                                   {".u8", 1},
                                                                                   {".s8", 1},
                                                                                   {".b8", 1}})
      if (decl.find(type + " ") != std::string::npos) {
        size = bytes;
        break;
      }
    if (const auto a = decl.find(".align "); a != std::string::npos)
      align = static_cast<uint32_t>(std::atoi(decl.c_str() + a + 7));
    if (const auto br = decl.find('['); br != std::string::npos)
      size *= static_cast<uint32_t>(std::atoi(decl.c_str() + br + 1));
    if (size == 0) return {};  // a declaration this reader does not know: say nothing
    if (align == 0) align = std::min<uint32_t>(size, 8);
    offset = (offset + align - 1) / align * align;
    params.push_back({static_cast<uint32_t>(params.size()), offset, size});
    offset += size;
    at = ptx.find(".param", line_end);
  }
  return params;
}

std::vector<std::string> ptx_entry_names(const std::string& ptx) {
  std::vector<std::string> names;
  for (std::size_t at = ptx.find(".entry"); at != std::string::npos;
       at = ptx.find(".entry", at + 6)) {
    std::size_t p = at + 6;
    while (p < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[p]))) ++p;
    std::size_t e = p;
    while (e < ptx.size() &&
           (std::isalnum(static_cast<unsigned char>(ptx[e])) || ptx[e] == '_' || ptx[e] == '$'))
      ++e;
    if (e > p) names.push_back(ptx.substr(p, e - p));
  }
  return names;
}

namespace {

constexpr uint64_t kFatbinMagic = 0xBA55ED50;
constexpr uint64_t kFatbinLz4 = 0x2000;   // entry flag: payload compressed with LZ4
constexpr uint64_t kFatbinZstd = 0x8000;  // entry flag: payload compressed with Zstandard

/// LZ4 block format (what nvcc's fatbinary used before Zstandard): sequences of literals and
/// matches. False on malformed input or when the output would not be exactly `size` bytes.
bool lz4_decompress(const std::string& in, std::size_t size, std::string& out) {
  out.clear();
  out.reserve(size);
  std::size_t i = 0;
  while (i < in.size()) {
    const unsigned token = static_cast<unsigned char>(in[i++]);
    std::size_t literals = token >> 4;
    if (literals == 15)
      for (unsigned char b = 255; b == 255 && i < in.size();)
        literals += (b = static_cast<unsigned char>(in[i++]));
    if (literals > in.size() - i || out.size() + literals > size) return false;
    out.append(in, i, literals);
    i += literals;
    if (i >= in.size()) break;  // the last sequence has literals only
    if (in.size() - i < 2) return false;
    const std::size_t offset =
        static_cast<unsigned char>(in[i]) |
        (static_cast<std::size_t>(static_cast<unsigned char>(in[i + 1])) << 8);
    i += 2;
    std::size_t match = (token & 15) + 4;
    if ((token & 15) == 15)
      for (unsigned char b = 255; b == 255 && i < in.size();)
        match += (b = static_cast<unsigned char>(in[i++]));
    if (offset == 0 || offset > out.size() || out.size() + match > size) return false;
    for (std::size_t k = 0; k < match; ++k) out.push_back(out[out.size() - offset]);
  }
  return out.size() == size;
}

/// Zstandard through the system's libzstd, loaded at run time (it ships with every distribution;
/// kgate does not link it). False when it is not there or the input is malformed.
bool zstd_decompress(const std::string& in, std::size_t size, std::string& out) {
  using Decompress = std::size_t (*)(void*, std::size_t, const void*, std::size_t);
  using IsError = unsigned (*)(std::size_t);
  static void* lib = ::dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return false;
  static const auto decompress = reinterpret_cast<Decompress>(::dlsym(lib, "ZSTD_decompress"));
  static const auto is_error = reinterpret_cast<IsError>(::dlsym(lib, "ZSTD_isError"));
  if (!decompress || !is_error) return false;
  out.assign(size, '\0');
  const std::size_t n = decompress(out.data(), size, in.data(), in.size());
  return !is_error(n) && n == size;
}

}  // namespace

std::optional<std::vector<FatbinImage>> fatbin_images(const std::string& img) {
  std::vector<FatbinImage> out;
  std::size_t at = 0;
  while (at + 16 <= img.size() && read_le(img, at, 4) == kFatbinMagic) {
    const uint64_t header = read_le(img, at + 6, 2), size = read_le(img, at + 8, 8);
    if (header < 16 || header > img.size() - at || size > img.size() - at - header)
      return std::nullopt;
    const std::size_t end = at + header + size;
    for (std::size_t e = at + header; e + 0x40 <= end;) {
      const uint64_t kind = read_le(img, e, 2), entry_header = read_le(img, e + 4, 4),
                     payload = read_le(img, e + 8, 8);
      if (entry_header < 0x40 || entry_header > end - e || payload > end - e - entry_header)
        return std::nullopt;
      if (kind == 1 || kind == 2) {
        FatbinImage f;
        f.ptx = kind == 1;
        f.arch = static_cast<uint32_t>(read_le(img, e + 0x1c, 4));
        const uint64_t flags = read_le(img, e + 0x28, 8);
        const std::string data = img.substr(e + entry_header, payload);
        if (flags & (kFatbinLz4 | kFatbinZstd)) {
          // Compressed: its stored size at +0x10, its size once decompressed at +0x38.
          const uint64_t stored = std::min<uint64_t>(read_le(img, e + 0x10, 4), data.size());
          const uint64_t full = read_le(img, e + 0x38, 8);
          const std::string packed = data.substr(0, stored);
          const bool ok = full > 0 && full < (1ULL << 31) &&
                          ((flags & kFatbinZstd) ? zstd_decompress(packed, full, f.data)
                                                 : lz4_decompress(packed, full, f.data));
          if (!ok) {
            f.data.clear();
            f.compressed = true;
          }
        } else {
          f.data = data;
        }
        out.push_back(std::move(f));
      }
      e += entry_header + payload;
    }
    at = (end + 7) / 8 * 8;  // fatbins in one section are 8-byte aligned
  }
  if (out.empty() && (img.size() < 4 || read_le(img, 0, 4) != kFatbinMagic)) return std::nullopt;
  return out;
}

std::optional<std::string> fatbin_cubin(const std::string& fatbin, uint32_t arch) {
  const auto images = fatbin_images(fatbin);
  if (!images) return std::nullopt;
  for (const auto& f : *images)
    if (!f.ptx && !f.compressed && f.arch == arch) return f.data;
  return std::nullopt;
}

std::optional<std::vector<std::string>> fatbin_kernel_names(const std::string& fatbin,
                                                            uint32_t arch) {
  const auto images = fatbin_images(fatbin);
  if (!images) return std::nullopt;
  if (const auto cubin = fatbin_cubin(fatbin, arch))
    if (auto names = elf_function_names(*cubin)) return names;
  std::vector<std::string> names;
  bool readable = false;
  for (const auto& f : *images) {
    if (f.compressed) continue;
    if (f.ptx) {
      const auto entries = ptx_entry_names(f.data);
      names.insert(names.end(), entries.begin(), entries.end());
      readable = true;
    } else if (const auto symbols = elf_function_names(f.data)) {
      names.insert(names.end(), symbols->begin(), symbols->end());
      readable = true;
    }
  }
  if (!readable) return std::nullopt;
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace kgate::package
