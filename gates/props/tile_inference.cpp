// Tile sizes from launch configurations.
#include "gates/props/tile_inference.hpp"

#include <cstdio>
#include <set>

namespace kgate::props {

std::vector<LaunchShape> launch_shapes(const std::vector<std::string>& lines) {
  std::vector<LaunchShape> out;
  for (const auto& line : lines) {
    if (line.rfind("launch ", 0) != 0) continue;
    const auto g = line.find(" grid=");
    const auto b = line.find(" block=");
    if (g == std::string::npos || b == std::string::npos) continue;
    LaunchShape s;
    long long v[6];
    if (std::sscanf(line.c_str() + g, " grid=%lld,%lld,%lld", &v[0], &v[1], &v[2]) != 3 ||
        std::sscanf(line.c_str() + b, " block=%lld,%lld,%lld", &v[3], &v[4], &v[5]) != 3)
      continue;
    for (int i = 0; i < 3; ++i) {
      s.grid[i] = v[i];
      s.block[i] = v[3 + i];
    }
    out.push_back(s);
  }
  return out;
}

namespace {

int64_t pow2_at_least(double x) {
  int64_t k = 1;
  while (static_cast<double>(k) < x - 1e-9 && k < (int64_t{1} << 20)) k *= 2;
  return k;
}

}  // namespace

std::vector<FoundSize> infer_tiles(const std::vector<LaunchShape>& launches, int64_t rows,
                                   int64_t n, std::string* why) {
  std::vector<FoundSize> out;
  std::set<int64_t> seen;
  std::string unexplained;
  const auto add = [&](int64_t size, const std::string& detail) {
    if (size > 1 && seen.insert(size).second) out.push_back({size, "observed", detail});
  };
  rows = std::max<int64_t>(rows, 1);
  for (const auto& l : launches) {
    const int64_t threads = l.block[0] * l.block[1] * l.block[2];
    const int64_t blocks = l.grid[0] * l.grid[1] * l.grid[2];
    const std::string shape = "grid " + std::to_string(l.grid[0]) + "," +
                              std::to_string(l.grid[1]) + "," + std::to_string(l.grid[2]) +
                              ", block " + std::to_string(l.block[0]) + "," +
                              std::to_string(l.block[1]) + "," + std::to_string(l.block[2]);
    if (threads <= 0 || blocks <= 0) continue;
    const double elements = static_cast<double>(rows) * static_cast<double>(n);
    if (blocks > rows &&
        static_cast<double>(blocks) * static_cast<double>(threads) * 16 >= elements) {
      // The grid covers the elements: along each row (a 2-D grid with a dim of `rows`), or
      // flattened.
      const bool per_row = rows > 1 && (l.grid[1] == rows || l.grid[2] == rows) && l.block[1] == 1;
      const double along = per_row ? static_cast<double>(l.grid[0] * l.block[0])
                                   : static_cast<double>(blocks * threads);
      const int64_t k = pow2_at_least((per_row ? static_cast<double>(n) : elements) / along);
      add(l.block[0] * k, shape + ": block.x " + std::to_string(l.block[0]) + " x " +
                              std::to_string(k) + " element(s) a thread" +
                              (per_row ? " along each row" : " over the rows flattened"));
    } else if (blocks == rows) {
      add(l.block[0],
          shape + ": a block per row, its " + std::to_string(l.block[0]) + " threads looping");
      add(4 * l.block[0],
          shape + ": a block per row, 4 x " + std::to_string(l.block[0]) + " (a vectorized loop)");
    } else if (blocks < rows && (l.block[0] == 32 || threads % 32 == 0) &&
               static_cast<double>(blocks) * static_cast<double>(threads / 32) >=
                   static_cast<double>(rows)) {
      add(32, shape + ": a warp per row, its 32 lanes looping");
      add(128, shape + ": a warp per row, 4 x 32 (a vectorized loop)");
    } else if (unexplained.empty()) {
      unexplained = shape + " fits no rule (a grid sized by the device, a persistent kernel?)";
    }
  }
  if (why) *why = out.empty() ? (launches.empty() ? "no launch was recorded" : unexplained) : "";
  return out;
}

}  // namespace kgate::props
