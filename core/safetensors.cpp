#include "core/safetensors.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/safe_text.hpp"
#include "core/strict_json.hpp"

namespace kgate {
namespace {

using json = nlohmann::json;

// The safetensors format caps its header at 100 MB; kgate reads captured inputs, which are small.
constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;
constexpr size_t kMaxRank = 16;

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw Error(ErrorKind::package, quote_untrusted(path) + ": " + what);
}

uint64_t read_u64_le(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

int64_t SafetensorsTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

int safetensors_dtype_size(const std::string& dtype) {
  static const std::map<std::string, int> sizes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},    {"I32", 4},
      {"I16", 2}, {"I8", 1},  {"U8", 1},  {"BOOL", 1}, {"F8_E4M3", 1}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

SafetensorsFile read_safetensors_header(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) bad(path, "not found");
  if (!std::filesystem::is_regular_file(status)) bad(path, "not a regular file");
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) bad(path, "cannot read its size: " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) bad(path, "cannot be read");
  unsigned char prefix[8];
  if (file_size < 8 || !in.read(reinterpret_cast<char*>(prefix), 8))
    bad(path, "not a safetensors file: shorter than its 8-byte header length");
  const uint64_t header_bytes = read_u64_le(prefix);
  if (header_bytes > kMaxHeaderBytes)
    bad(path, "not a safetensors file: its header length is " + std::to_string(header_bytes) +
                  " bytes (at most 100 MB)");
  if (header_bytes > file_size - 8)
    bad(path, "truncated: the header length says " + std::to_string(header_bytes) +
                  " bytes, the file has " + std::to_string(file_size - 8) + " after it");
  std::string text(static_cast<size_t>(header_bytes), '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(header_bytes)))
    bad(path, "cannot read its header");
  json header;
  std::string duplicate;
  try {
    header = parse_strict_json(text, &duplicate);
  } catch (const json::exception& e) {
    bad(path, "not a safetensors file: its header is not valid JSON (" + json_error_text(e) + ")");
  }
  if (!duplicate.empty()) bad(path, "the header names " + quote_untrusted(duplicate) + " twice");
  if (!header.is_object()) bad(path, "not a safetensors file: its header is not a JSON object");

  SafetensorsFile file;
  file.path = path;
  file.data_start = 8 + header_bytes;
  const uint64_t data_bytes = file_size - file.data_start;
  for (const auto& [name, entry] : header.items()) {
    const std::string where = "tensor " + quote_untrusted(name);
    if (name == "__metadata__") {
      if (!entry.is_object()) bad(path, "__metadata__ must be an object of strings");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string())
          bad(path, "__metadata__." + inline_untrusted(key) + " must be a string");
        file.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    if (!entry.is_object())
      bad(path, where + ": expected an object with dtype, shape and data_offsets");
    SafetensorsTensor t;
    t.name = name;
    const auto dtype = entry.find("dtype");
    if (dtype == entry.end() || !dtype->is_string()) bad(path, where + ": dtype must be a string");
    t.dtype = dtype->get<std::string>();
    const int size = safetensors_dtype_size(t.dtype);
    if (size == 0)
      bad(path, where + ": dtype " + quote_untrusted(t.dtype) +
                    " is not one kgate reads (F64, F32, F16, BF16, F8_E4M3, I64, I32, I16, I8, U8, "
                    "BOOL)");
    const auto shape = entry.find("shape");
    if (shape == entry.end() || !shape->is_array() || shape->size() > kMaxRank)
      bad(path, where + ": shape must be an array of at most 16 sizes");
    uint64_t numel = 1;
    for (const auto& d : *shape) {
      if (!d.is_number_unsigned())
        bad(path, where + ": shape holds " + quote_untrusted(d.dump()) + ", not a size");
      const uint64_t v = d.get<uint64_t>();
      if (v > uint64_t{std::numeric_limits<int64_t>::max()} || (v && numel > data_bytes / v))
        bad(path,
            where + ": shape " + shape->dump() + " holds more elements than the file has bytes");
      numel *= v;
      t.shape.push_back(static_cast<int64_t>(v));
    }
    const auto offsets = entry.find("data_offsets");
    if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2 ||
        !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned())
      bad(path, where + ": data_offsets must be [begin, end]");
    t.begin = (*offsets)[0].get<uint64_t>();
    t.end = (*offsets)[1].get<uint64_t>();
    if (t.begin > t.end || t.end > data_bytes)
      bad(path, where + ": data_offsets [" + std::to_string(t.begin) + ", " +
                    std::to_string(t.end) + "] reach outside the " + std::to_string(data_bytes) +
                    " bytes of data");
    if (t.end - t.begin != numel * static_cast<uint64_t>(size))
      bad(path, where + ": " + std::to_string(t.end - t.begin) + " bytes do not hold shape " +
                    shape->dump() + " of " + t.dtype + " (" +
                    std::to_string(numel * static_cast<uint64_t>(size)) + " bytes)");
    file.tensors.push_back(std::move(t));
  }
  std::sort(
      file.tensors.begin(), file.tensors.end(),
      [](const SafetensorsTensor& a, const SafetensorsTensor& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < file.tensors.size(); ++i)
    if (file.tensors[i].begin < file.tensors[i - 1].end &&
        file.tensors[i].begin < file.tensors[i].end)
      bad(path, "tensors " + quote_untrusted(file.tensors[i - 1].name) + " and " +
                    quote_untrusted(file.tensors[i].name) + " share bytes");
  return file;
}

std::vector<char> read_safetensors_data(const SafetensorsFile& file,
                                        const SafetensorsTensor& tensor) {
  std::ifstream in(file.path, std::ios::binary);
  std::vector<char> bytes(static_cast<size_t>(tensor.end - tensor.begin));
  in.seekg(static_cast<std::streamoff>(file.data_start + tensor.begin));
  if (!in || !in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    bad(file.path, "cannot read the bytes of tensor " + quote_untrusted(tensor.name) +
                       " (was the file changed?)");
  return bytes;
}

void write_safetensors(const std::string& path, const std::vector<SafetensorsInput>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    const int size = safetensors_dtype_size(t.dtype);
    if (size == 0 || static_cast<uint64_t>(numel) * static_cast<uint64_t>(size) != t.bytes.size())
      throw_usage("write_safetensors: tensor '" + t.name + "' has " +
                  std::to_string(t.bytes.size()) + " bytes, not its shape's for dtype " + t.dtype);
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  unsigned char prefix[8];
  for (int i = 0; i < 8; ++i)
    prefix[i] = static_cast<unsigned char>((uint64_t{text.size()} >> (8 * i)) & 0xff);
  out.write(reinterpret_cast<const char*>(prefix), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& t : tensors)
    out.write(t.bytes.data(), static_cast<std::streamsize>(t.bytes.size()));
  if (!out) throw_usage("cannot write " + path);
}

}  // namespace kgate
