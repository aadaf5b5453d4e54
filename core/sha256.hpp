// SHA-256 (FIPS 180-4): the NVRTC cache keys compiled packages by the digest of everything that
// decides the compiler's output; code digests (base builds, CUBINs' functions) use it too.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kgate {

/// Incremental SHA-256.
class Sha256 {
 public:
  Sha256();
  /// Appends raw bytes.
  Sha256& update(const void* data, std::size_t size);
  Sha256& update(std::string_view bytes) { return update(bytes.data(), bytes.size()); }
  /// Appends a length-prefixed field, so that ("ab","c") and ("a","bc") hash differently.
  Sha256& field(std::string_view bytes);
  /// Finishes and returns the digest as 64 lowercase hex digits. The object is spent afterwards.
  std::string hex();
  /// Finishes and returns the 32 digest bytes. The object is spent afterwards.
  std::string digest();

 private:
  void block(const unsigned char* p);
  std::array<uint32_t, 8> h_;
  std::array<unsigned char, 64> buf_{};
  std::size_t used_ = 0;
  uint64_t total_ = 0;
};

/// SHA-256 of `bytes`, in hex.
std::string sha256_hex(std::string_view bytes);

/// Lowercase hex of raw bytes.
std::string to_hex(std::string_view bytes);

/// HMAC-SHA256 (RFC 2104) of `message` under `key`, in hex.
std::string hmac_sha256_hex(std::string_view key, std::string_view message);

}  // namespace kgate
