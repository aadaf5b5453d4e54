// The torch-free view of a tensor that kernels receive: pointer, dtype, sizes, strides (in
// elements).
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.hpp"

namespace kgate {

struct TensorView {
  void* data = nullptr;  ///< first element (already includes any storage offset)
  DType dtype = DType::f32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  ///< in elements

  int64_t dim() const { return static_cast<int64_t>(sizes.size()); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return n;
  }
  /// Row-major contiguous (size-1 dims may have any stride).
  bool is_contiguous() const {
    int64_t expected = 1;
    for (int64_t i = dim() - 1; i >= 0; --i) {
      if (sizes[i] != 1 && strides[i] != expected) return false;
      expected *= sizes[i];
    }
    return true;
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

}  // namespace kgate
