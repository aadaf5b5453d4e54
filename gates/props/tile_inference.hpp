// Tile sizes inferred from what a kernel launched on one probe case (its CUPTI launch records),
// for a CMake kernel or torch op that declares none: the ragged family then reaches them +- 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/found_size.hpp"

namespace kgate::props {

/// One kernel launch's configuration, as a launch record shows it.
struct LaunchShape {
  int64_t grid[3] = {1, 1, 1};
  int64_t block[3] = {1, 1, 1};
};

/// Reads "grid=X,Y,Z block=X,Y,Z" from each launch line of a record (runtime/cuda/launch_record);
/// lines of memory copies and fills are left out.
std::vector<LaunchShape> launch_shapes(const std::vector<std::string>& lines);

/// The tile sizes on the edge symbol that the launches of a probe case show, the case having `rows`
/// rows (every other symbol's product) of `n` elements along it, n well above any tile. Per
/// launch, with T threads a block and G blocks:
/// - the grid covers the elements (G x T x 16 >= rows x n): k = the power of two nearest above
///   n / (threads along a row), the elements a thread takes; the tile is block.x x k (a 2-D grid
///   whose y or z is `rows`: along a row; else over rows x n flattened);
/// - a block per row (G == rows): block.x, and 4 x block.x (a vectorized loop's stride);
/// - fewer blocks than rows, 32-thread rows of a block (a warp per row): 32 and 128;
/// - anything else (a persistent grid, sized by the device): nothing; `why` says so.
/// Each size once, with how it was found ("observed").
std::vector<FoundSize> infer_tiles(const std::vector<LaunchShape>& launches, int64_t rows,
                                   int64_t n, std::string* why = nullptr);

}  // namespace kgate::props
