// Tile sizes inferred from launch configurations (gates/props/tile_inference), on synthetic
// launches of the shapes kernels take: a block per row, a 2-D grid over rows, a flattened grid, a
// warp per row, a persistent grid.
#include <gtest/gtest.h>

#include "gates/props/tile_inference.hpp"

namespace kgate::props {
namespace {

std::vector<int64_t> sizes(const std::vector<FoundSize>& found) {
  std::vector<int64_t> out;
  for (const auto& f : found) {
    EXPECT_EQ(f.origin, "observed");
    out.push_back(f.size);
  }
  return out;
}

LaunchShape shape(int64_t gx, int64_t gy, int64_t bx, int64_t by = 1) {
  LaunchShape s;
  s.grid[0] = gx;
  s.grid[1] = gy;
  s.block[0] = bx;
  s.block[1] = by;
  return s;
}

TEST(TileInference, ReadsLaunchLines) {
  const auto shapes = launch_shapes(
      {"launch k<float> code=0123 grid=3,1,1 block=256,1,1 smem=0 args=", "memset 4096 bytes",
       "launch g code=? grid=17,3,1 block=128,2,1 smem=64 args="});
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(shapes[0].grid[0], 3);
  EXPECT_EQ(shapes[0].block[0], 256);
  EXPECT_EQ(shapes[1].grid[1], 3);
  EXPECT_EQ(shapes[1].block[1], 2);
}

TEST(TileInference, ABlockPerRowLoopsInBlockStrides) {
  // 3 rows of 16381: grid 3, block 256. The loop's stride is the block (or 4 x it, vectorized).
  EXPECT_EQ(sizes(infer_tiles({shape(3, 1, 256)}, 3, 16381)), (std::vector<int64_t>{256, 1024}));
}

TEST(TileInference, AGridOverTheRowFindsTheElementsAThreadTakes) {
  // 2-D: x covers a row in blocks of 256 threads x 4 elements (ceil(16381 / 1024) = 16), y the
  // rows.
  EXPECT_EQ(sizes(infer_tiles({shape(16, 3, 256)}, 3, 16381)), (std::vector<int64_t>{1024}));
  // One element a thread: 64 blocks of 256.
  EXPECT_EQ(sizes(infer_tiles({shape(64, 3, 256)}, 3, 16381)), (std::vector<int64_t>{256}));
  // Flattened: 3 x 16381 elements in blocks of 128 threads x 8 elements.
  EXPECT_EQ(sizes(infer_tiles({shape(48, 1, 128)}, 3, 16381)), (std::vector<int64_t>{1024}));
}

TEST(TileInference, AWarpPerRowHasNoBlockTile) {
  // 8 warps a block, one row each: one block for 3 rows; the lanes' stride is 32 (or 128).
  EXPECT_EQ(sizes(infer_tiles({shape(1, 1, 256)}, 3, 16381)), (std::vector<int64_t>{32, 128}));
  EXPECT_EQ(sizes(infer_tiles({shape(1, 1, 32, 8)}, 3, 16381)), (std::vector<int64_t>{32, 128}));
}

TEST(TileInference, SaysWhyWhenNothingFits) {
  std::string why;
  // 132 blocks of 64 threads for 3 x 16381 elements: not a cover (16 elements a thread would not
  // reach), not a block or a warp per row.
  EXPECT_TRUE(infer_tiles({shape(132, 1, 64)}, 3, 4000000, &why).empty());
  EXPECT_NE(why.find("fits no rule"), std::string::npos) << why;
  EXPECT_TRUE(infer_tiles({}, 3, 16381, &why).empty());
  EXPECT_EQ(why, "no launch was recorded");
}

}  // namespace
}  // namespace kgate::props
