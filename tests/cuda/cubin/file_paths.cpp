// A check that records its file, as TORCH_CHECK and TORCH_LIBRARY do
// (tests/cuda/module_digest_test.cpp).
#include <cstdio>

extern "C" int checked(int x) {
  if (x < 0) std::fprintf(stderr, "%s:%d: x must not be negative\n", __FILE__, __LINE__);
  return x * 2;
}
