// safetensors files (the format of Hugging Face's safetensors library), read and written without
// Python or LibTorch: an 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and byte range, then the tensors' bytes. kgate reads them as captured inputs: real
// tensors a kernel was optimized for, run as fixed correctness cases.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kgate {

/// One tensor of a safetensors header; its bytes are [begin, end) of the data that follows.
struct SafetensorsTensor {
  std::string name;
  std::string dtype;  ///< as in the file: "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8",
                      ///< "U8", "BOOL"
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;

  int64_t numel() const;
};

/// A safetensors file's header, checked: every tensor's range lies inside the file, ranges do not
/// overlap, and each holds exactly numel * element size bytes.
struct SafetensorsFile {
  std::string path;
  std::vector<SafetensorsTensor> tensors;       ///< in the order of their data
  std::map<std::string, std::string> metadata;  ///< the header's "__metadata__" (string values)
  uint64_t data_start = 0;                      ///< file offset of the data region

  const SafetensorsTensor* find(const std::string& name) const;
};

/// Bytes per element of a safetensors dtype name; 0 for a name kgate does not know.
int safetensors_dtype_size(const std::string& dtype);

/// Reads and checks the header of `path`. Throws a package Error naming the file and what is wrong
/// (not a safetensors file, a header past 100 MB, a tensor whose bytes do not fit its shape, ...).
SafetensorsFile read_safetensors_header(const std::string& path);

/// The bytes of one tensor of `file` (little-endian, row-major, as stored).
std::vector<char> read_safetensors_data(const SafetensorsFile& file,
                                        const SafetensorsTensor& tensor);

/// A tensor to write: its bytes must hold numel(shape) * safetensors_dtype_size(dtype).
struct SafetensorsInput {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<char> bytes;
};

/// Writes `tensors` (in that order) and `metadata` to `path`. Throws a usage Error on a tensor
/// whose bytes do not match its shape and dtype, or when the file cannot be written.
void write_safetensors(const std::string& path, const std::vector<SafetensorsInput>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace kgate
