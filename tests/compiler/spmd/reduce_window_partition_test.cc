// Reduce-window partitioning (docs/reference/gspmd.md#halo-exchange, #windowed-input-resharding;
// #partitioner-checklist item 13): the operand keeps the result's tiling, halos come from
// neighbours with collective-permutes whose count follows from the window arithmetic (output tile j
// covers [j*os, (j+1)*os), reads [j*os*stride - pad_low,
// ... + (os-1)*stride + size)), padding takes the init value.
#include <gtest/gtest.h>

#include "tests/compiler/spmd/dot_test_util.h"

namespace podsim::compiler {
namespace {

using spmd_dot_test::dot_module;
using spmd_dot_test::expect_equivalent;
using spmd_dot_test::partition;

TEST(SpmdReduceWindow, ReduceWindowTiledTwoSideHalo) {
  // 16 over 4 (shards of 4), max window 3 pad 1_1: tile j reads [4j-1,
  // 4j+5): one element from each neighbour -> 2 collective-permutes; the
  // outer padding takes the init (-inf-like -1000).
  auto p = partition(
      dot_module(
          "  x = f32[2,16] parameter(0), sharding={devices=[1,4]<=[4]}\n"
          "  lo = f32[] constant(-1000)\n"
          "  ROOT r = f32[2,16] reduce-window(x, lo), window={size=1x3 pad=0_0x1_1}, to_apply=max, "
          "sharding={devices=[1,4]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.collective_permutes, 2);
  EXPECT_EQ(p.result.stats.all_gathers + p.result.stats.default_fallbacks, 0);
}

TEST(SpmdReduceWindow, ReduceWindowTiledOneSideUnequalHalo) {
  // 15 over 4 (shards of 4), sum window 3 stride 3 pad 0_1: O = 5, os = 2;
  // tile j reads [6j, 6j+6): right halos 2, 4, 3 (clipped at 15), none for
  // tile 3 (no outputs), no left halo -> one right piece, 1 permute.
  auto p = partition(
      dot_module(
          "  x = f32[15] parameter(0), sharding={devices=[4]<=[4]}\n"
          "  z = f32[] constant(0)\n"
          "  ROOT r = f32[5] reduce-window(x, z), window={size=3 stride=3 pad=0_1}, to_apply=add, "
          "sharding={devices=[4]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.collective_permutes, 1);
  EXPECT_EQ(p.result.stats.default_fallbacks, 0);
}

TEST(SpmdReduceWindow, ReduceWindowTiledOneSideHaloBeyondNeighbor) {
  // 8 over 4 (shards of 2), sum window 5 pad 0_4: tile j reads [2j, 2j+6),
  // a right halo of 4 = two neighbour shards -> 2 permutes.
  auto p = partition(
      dot_module("  x = f32[8] parameter(0), sharding={devices=[4]<=[4]}\n"
                 "  z = f32[] constant(0)\n"
                 "  ROOT r = f32[8] reduce-window(x, z), window={size=5 pad=0_4}, to_apply=add, "
                 "sharding={devices=[4]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.collective_permutes, 2);
  EXPECT_EQ(p.result.stats.default_fallbacks, 0);
}

TEST(SpmdReduceWindow, ReduceWindowAlignedStrideNeedsNoHalo) {
  // 16 over 4, window 2 stride 2: tile j's 2 outputs read exactly its own
  // [4j, 4j+4): no communication at all.
  auto p = partition(
      dot_module("  x = f32[16] parameter(0), sharding={devices=[4]<=[4]}\n"
                 "  lo = f32[] constant(-1000)\n"
                 "  ROOT r = f32[8] reduce-window(x, lo), window={size=2 stride=2}, to_apply=max, "
                 "sharding={devices=[4]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(
      p.result.stats.collective_permutes + p.result.stats.all_gathers + p.result.stats.all_to_alls,
      0);
}

TEST(SpmdReduceWindow, ReduceWindowTiledNegativeLeftHalo) {
  // 16 over 4 (shards of 4), window 1 stride 3: O = 6, os = 2; tile j reads
  // [6j, 6j+4): tile 1 starts inside its shard ([4,8)) and needs 2 from the
  // right, tile 2 needs [12,16) = all of tile 3's shard, tile 3 has no
  // outputs. Left halos are negative (trimmed): one right piece, 1 permute.
  auto p = partition(
      dot_module("  x = f32[16] parameter(0), sharding={devices=[4]<=[4]}\n"
                 "  lo = f32[] constant(-1000)\n"
                 "  ROOT r = f32[6] reduce-window(x, lo), window={size=1 stride=3}, to_apply=max, "
                 "sharding={devices=[4]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.collective_permutes, 1);
  EXPECT_EQ(p.result.stats.default_fallbacks, 0);
}

TEST(SpmdReduceWindow, ReduceWindowTiled2D) {
  // [7,6] tiled [2,2] (uneven rows: shards of 4, the second holds 3), 3x3
  // sum window pad 1 on both dims: one halo element each way per dim ->
  // 4 permutes; the uneven tail is masked with the init value.
  auto p = partition(
      dot_module(
          "  x = f32[7,6] parameter(0), sharding={devices=[2,2]<=[4]}\n"
          "  z = f32[] constant(0)\n"
          "  ROOT r = f32[7,6] reduce-window(x, z), window={size=3x3 pad=1_1x1_1}, to_apply=add, "
          "sharding={devices=[2,2]<=[4]}\n"),
      4);
  expect_equivalent(p, 2);
  EXPECT_EQ(p.result.stats.collective_permutes, 4);
  EXPECT_EQ(p.result.stats.default_fallbacks, 0);
}

TEST(SpmdReduceWindow, ReduceWindowOn3DMeshWithReplication) {
  // [2,2,2] devices: x [8,8] tiled [2,2] and replicated 2; pooling 2x2
  // stride 2 aligns with the shards: no communication, each replica pair
  // computes the same tile.
  auto p = partition(
      dot_module(
          "  x = f32[8,8] parameter(0), sharding={devices=[2,2,2]<=[8] last_tile_dim_replicate}\n"
          "  lo = f32[] constant(-1000)\n"
          "  ROOT r = f32[4,4] reduce-window(x, lo), window={size=2x2 stride=2x2}, to_apply=max, "
          "sharding={devices=[2,2,2]<=[8] last_tile_dim_replicate}\n"),
      8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.collective_permutes + p.result.stats.all_gathers, 0);
}

}  // namespace
}  // namespace podsim::compiler

namespace podsim::compiler {
namespace {

// Sweep: window sizes 1-4, strides 1-3, paddings 0-2 each side on an uneven
// dim (13) over 2, 4 and 8 devices; whenever the halo fits the cap the
// handler must exchange it, else fall back, and the result must match.
TEST(SpmdReduceWindow, WindowArithmeticSweep) {
  int handled = 0, total = 0;
  for (int n : {2, 4, 8})
    for (int size = 1; size <= 4; ++size)
      for (int stride = 1; stride <= 3; ++stride)
        for (int lo = 0; lo <= 2; ++lo)
          for (int hi = 0; hi <= 2; ++hi) {
            const int out = (13 + lo + hi - size) / stride + 1;
            const std::string ns = std::to_string(n);
            auto p = partition(
                dot_module("  x = f32[13] parameter(0), sharding={devices=[" + ns + "]<=[" + ns +
                           "]}\n"
                           "  z = f32[] constant(0)\n"
                           "  ROOT r = f32[" +
                           std::to_string(out) + "] reduce-window(x, z), window={size=" +
                           std::to_string(size) + " stride=" + std::to_string(stride) +
                           " pad=" + std::to_string(lo) + "_" + std::to_string(hi) +
                           "}, to_apply=add, sharding={devices=[" + ns + "]<=[" + ns + "]}\n"),
                n);
            VerifyResult v = verify_partitioning(p.annotated, p.result.module, 3, 1e-4);
            ASSERT_TRUE(v.ok) << "n " << n << " size " << size << " stride " << stride << " pad "
                              << lo << "_" << hi << ": " << v.first_mismatch;
            handled += p.result.stats.default_fallbacks == 0;
            ++total;
          }
  // Most windows fit two neighbour pieces; all-but-a-few must be handled.
  EXPECT_GT(handled, total * 3 / 4) << handled << " of " << total;
}

}  // namespace
}  // namespace podsim::compiler
