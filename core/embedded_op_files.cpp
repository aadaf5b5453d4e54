// The op files of the kernels compiled into the program (core/embedded_op_files.hpp).
#include "core/embedded_op_files.hpp"

#include <mutex>

namespace kgate {
namespace {
std::map<std::string, std::string>& embedded() {
  static std::map<std::string, std::string> files;
  return files;
}
// True between begin_op_file_capture() and end_op_file_capture().
bool& capturing() {
  static bool on = false;
  return on;
}
// The op files the last captured module embedded (path -> bytes).
std::map<std::string, std::string>& captured_files() {
  static std::map<std::string, std::string> files;
  return files;
}
// Kernel name -> the op file it names.
struct Declared {
  std::mutex mutex;
  std::map<std::string, std::string> op_file_of;
};
Declared& declared() {
  static Declared d;
  return d;
}
}  // namespace

bool embed_op_file(const char* path, const unsigned char* text, std::size_t size) {
  if (capturing()) {  // a base module's op file: the head's definitions judge both sides; kept
                      // apart
    captured_files()[path] = std::string(reinterpret_cast<const char*>(text), size);
    return true;
  }
  embedded()[path] = std::string(reinterpret_cast<const char*>(text), size);
  return true;
}

std::map<std::string, std::string> captured_op_files() { return captured_files(); }

const std::string* embedded_op_file(const std::string& path) {
  const auto it = embedded().find(path);
  return it == embedded().end() ? nullptr : &it->second;
}

void begin_op_file_capture() {
  capturing() = true;
  captured_files().clear();
}

void end_op_file_capture() { capturing() = false; }

void declare_kernel_op_file(const std::string& kernel, const std::string& path) {
  Declared& d = declared();
  std::lock_guard<std::mutex> lock(d.mutex);
  d.op_file_of[kernel] = path;
}

std::vector<std::string> kernel_op_files() {
  Declared& d = declared();
  std::lock_guard<std::mutex> lock(d.mutex);
  std::vector<std::string> out;
  for (const auto& [kernel, path] : d.op_file_of) out.push_back(path);
  return out;
}

}  // namespace kgate
