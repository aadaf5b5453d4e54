// Helpers of the package tests: a temporary package directory that removes itself, file writers,
// and softmax and layer_norm op signatures standing in for the catalogue.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "core/op_signature.hpp"
#include "runtime/package/manifest.hpp"

namespace kgate::package::testing {

/// A fresh directory under the system's temporary directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    static std::atomic<unsigned> serial{0};
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("kgate-package-test-" + std::to_string(::getpid()) + "-" +
             std::to_string(serial.fetch_add(1)) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
    path_ = std::filesystem::canonical(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  /// Writes `text` to path()/relative, creating folders.
  void write(const std::string& relative, const std::string& text) const {
    const auto p = path_ / relative;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
  }
  void write_json(const std::string& relative, const nlohmann::json& j) const {
    write(relative, j.dump(2));
  }

 private:
  std::filesystem::path path_;
};

/// softmax as the catalogue declares it: x:[B,N] -> y:[B,N], attribute dim.
inline const OpSignature& softmax_op() {
  static const OpSignature op = [] {
    OpSignature s;
    s.name = "softmax";
    s.inputs = {{"x", {"B", "N"}}};
    s.outputs = {{"y", {"B", "N"}}};
    s.symbols = {{"B", 1, 65536, 512}, {"N", 1, 262144, 8192}};
    s.reduced_symbol = "N";
    s.dtypes = {DType::f32, DType::f16, DType::bf16};
    s.attributes = {{"dim", -1}};
    return s;
  }();
  return op;
}

/// layer_norm as the catalogue declares it: x:[B,N], weight:[N], bias:[N] -> y:[B,N], attribute
/// eps (not an integer).
inline const OpSignature& layer_norm_op() {
  static const OpSignature op = [] {
    OpSignature s;
    s.name = "layer_norm";
    s.inputs = {{"x", {"B", "N"}}, {"weight", {"N"}}, {"bias", {"N"}}};
    s.outputs = {{"y", {"B", "N"}}};
    s.symbols = {{"B", 1, 65536, 512}, {"N", 1, 65536, 8192}};
    s.reduced_symbol = "N";
    s.dtypes = {DType::f32, DType::f16, DType::bf16};
    s.attributes = {{"eps", 1e-5}};
    return s;
  }();
  return op;
}

/// Check options with a catalogue of softmax and layer_norm.
inline ManifestCheckOptions catalogue_options() {
  ManifestCheckOptions o;
  o.find_op = [](const std::string& name) -> const OpSignature* {
    if (name == "softmax") return &softmax_op();
    return name == "layer_norm" ? &layer_norm_op() : nullptr;
  };
  o.known_ops = {"layer_norm", "softmax"};
  return o;
}

}  // namespace kgate::package::testing
