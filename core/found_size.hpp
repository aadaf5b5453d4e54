// A size where a kernel's behaviour changes that kgate found itself (a package's grid divisor,
// guard bound or launch condition; a block seen in the kernel's launches), with where it came from.
#pragma once

#include <cstdint>
#include <string>

namespace kgate {

/// A size on an op's edge symbol (its reduced symbol) that the kernel did not declare as a tile.
struct FoundSize {
  int64_t size = 0;
  std::string origin;  ///< "manifest" (a package's kgate.json) or "observed" (CUPTI launch records)
  std::string detail;  ///< how it was found: "grid ceil_div(N, 256)", "guard.shapes.N.max", ...
};

inline bool operator==(const FoundSize& a, const FoundSize& b) {
  return a.size == b.size && a.origin == b.origin && a.detail == b.detail;
}

}  // namespace kgate
