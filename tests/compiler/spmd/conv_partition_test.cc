// Convolution partitioning (docs/reference/gspmd.md#convolution, #halo-exchange;
// #partitioner-checklist item 14): spatially tiled activations exchange halos with their neighbours
// (collective-permutes, counted from the window arithmetic in each comment),
// batch / feature dims go through the dot strategies. Numeric equivalence
// against the unpartitioned convolution in every test.
#include <gtest/gtest.h>

#include "tests/compiler/spmd/dot_test_util.h"

namespace podsim::compiler {
namespace {

using spmd_dot_test::dot_module;
using spmd_dot_test::expect_equivalent;
using spmd_dot_test::partition;

TEST(SpmdConv, ConvolutionLhsTiledRhsReplicated) {
  // Spatial 16 over 4 (shards of 4), window 3, pad 1_1, stride 1: output
  // tile j = [4j, 4j+4) reads input [4j-1, 4j+5): one element from each
  // neighbour -> one left and one right collective-permute, no gather.
  auto p =
      partition(dot_module("  x = f32[2,16,3] parameter(0), sharding={devices=[1,4,1]<=[4]}\n"
                           "  k = f32[3,3,5] parameter(1), sharding={replicated}\n"
                           "  ROOT c = f32[2,16,5] convolution(x, k), window={size=3 pad=1_1}, "
                           "dim_labels=b0f_0io->b0f, sharding={devices=[1,4,1]<=[4]}\n"),
                4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.collective_permutes, 2);
  EXPECT_EQ(
      p.result.stats.all_gathers + p.result.stats.all_reduces + p.result.stats.default_fallbacks,
      0);
}

TEST(SpmdConv, ConvolutionLhsTiledRhsReplicatedNeedReshard) {
  // The input arrives tiled on batch (4 over 4) but the output is tiled on
  // the spatial dim: the input's tiling moves from batch to spatial (one
  // all-to-all, same device order), then the 1-element halos each way.
  auto p =
      partition(dot_module("  x = f32[4,16,3] parameter(0), sharding={devices=[4,1,1]<=[4]}\n"
                           "  k = f32[3,3,5] parameter(1), sharding={replicated}\n"
                           "  ROOT c = f32[4,16,5] convolution(x, k), window={size=3 pad=1_1}, "
                           "dim_labels=b0f_0io->b0f, sharding={devices=[1,4,1]<=[4]}\n"),
                4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_to_alls, 1);
  EXPECT_EQ(p.result.stats.collective_permutes, 2);
  EXPECT_EQ(p.result.stats.full_replications + p.result.stats.default_fallbacks, 0);
}

TEST(SpmdConv, ConvolutionLhsTiled2DSpatial) {
  // 8x8 image tiled [2,2] on its two spatial dims, 3x3 window pad 1: one
  // halo element each way on each dim -> 4 collective-permutes.
  auto p = partition(
      dot_module("  x = f32[1,8,8,2] parameter(0), sharding={devices=[1,2,2,1]<=[4]}\n"
                 "  k = f32[3,3,2,4] parameter(1), sharding={replicated}\n"
                 "  ROOT c = f32[1,8,8,4] convolution(x, k), window={size=3x3 pad=1_1x1_1}, "
                 "dim_labels=b01f_01io->b01f, sharding={devices=[1,2,2,1]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.collective_permutes, 4);
  EXPECT_EQ(p.result.stats.all_gathers + p.result.stats.default_fallbacks, 0);
}

TEST(SpmdConv, ConvolutionStridedUnevenSpatial) {
  // D = 15 over 4 (shards of 4), window 3 stride 2 pad 1_1: O = (15+2-3)/2+1
  // = 8, 2 outputs per tile; tile j reads [4j-1, 4j+4): only a left halo of
  // 1 (the last tile's read stops at 15) -> 1 collective-permute.
  auto p = partition(
      dot_module("  x = f32[1,15,2] parameter(0), sharding={devices=[1,4,1]<=[4]}\n"
                 "  k = f32[3,2,3] parameter(1), sharding={replicated}\n"
                 "  ROOT c = f32[1,8,3] convolution(x, k), window={size=3 stride=2 pad=1_1}, "
                 "dim_labels=b0f_0io->b0f, sharding={devices=[1,4,1]<=[4]}\n"),
      4);
  expect_equivalent(p, 4);
  EXPECT_EQ(p.result.stats.collective_permutes, 1);
  EXPECT_EQ(p.result.stats.default_fallbacks, 0);
}

TEST(SpmdConv, ConvolutionDilatedWindowBeyondNeighbour) {
  // D = 8 over 4 (shards of 2), window 2 with rhs_dilate 3 (reach 4), pad
  // 0_3: tile j reads [2j, 2j+5): a right halo of 3 > one shard -> two
  // right pieces, 2 collective-permutes.
  auto p = partition(
      dot_module("  x = f32[1,8,1] parameter(0), sharding={devices=[1,4,1]<=[4]}\n"
                 "  k = f32[2,1,2] parameter(1), sharding={replicated}\n"
                 "  ROOT c = f32[1,8,2] convolution(x, k), window={size=2 pad=0_3 rhs_dilate=3}, "
                 "dim_labels=b0f_0io->b0f, sharding={devices=[1,4,1]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.collective_permutes, 2);
}

TEST(SpmdConv, ConvolutionOn3DMeshBatchSpatialFeature) {
  // [2,2,2] mesh, device 4b + 2s + o: input [b/x, spatial/y] replicated over
  // z, kernel tiled on the output feature by z (device 2r + o), output
  // [b/x, spatial/y, feature/z]: every operand already has the layout the
  // spatial rule needs; only the spatial halos move (1 each way, 2 permutes).
  auto p =
      partition(dot_module("  x = f32[2,8,3] parameter(0), sharding={devices=[2,2,1,2]<=[8] "
                           "last_tile_dim_replicate}\n"
                           "  k = f32[3,3,4] parameter(1), "
                           "sharding={devices=[1,1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}\n"
                           "  ROOT c = f32[2,8,4] convolution(x, k), window={size=3 pad=1_1}, "
                           "dim_labels=b0f_0io->b0f, sharding={devices=[2,2,2]<=[8]}\n"),
                8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.collective_permutes, 2);
  EXPECT_EQ(
      p.result.stats.all_gathers + p.result.stats.all_to_alls + p.result.stats.full_replications,
      0);
}

TEST(SpmdConv, ConvolutionBatchAndOutputFeatureAsDot) {
  // Spatial whole; batch tiled on lhs (device 2b + r), output feature tiled
  // on the kernel (device 2r + o), out [b/2, o/2] (device 2b + o): the two
  // partial shardings merge into the out's tiling: no collective.
  auto p =
      partition(dot_module("  x = f32[4,6,6] parameter(0), sharding={devices=[2,1,1,2]<=[4] "
                           "last_tile_dim_replicate}\n"
                           "  k = f32[3,6,4] parameter(1), "
                           "sharding={devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}\n"
                           "  ROOT c = f32[4,6,4] convolution(x, k), window={size=3 pad=1_1}, "
                           "dim_labels=b0f_0io->b0f, sharding={devices=[2,1,2]<=[4]}\n"),
                4);
  expect_equivalent(p);
  EXPECT_EQ(
      p.result.stats.all_reduces + p.result.stats.all_gathers + p.result.stats.collective_permutes,
      0);
}

TEST(SpmdConv, ConvolutionInputFeatureContracting) {
  // Input feature (5, uneven over 2) tiled on lhs and kernel: partial sums
  // over the feature halves + one all-reduce.
  auto p = partition(dot_module("  x = f32[2,5,5] parameter(0), sharding={devices=[1,1,2]<=[2]}\n"
                                "  k = f32[3,5,4] parameter(1), sharding={devices=[1,2,1]<=[2]}\n"
                                "  ROOT c = f32[2,5,4] convolution(x, k), window={size=3 pad=1_1}, "
                                "dim_labels=b0f_0io->b0f, sharding={replicated}\n"),
                     2);
  expect_equivalent(p, 6);
  EXPECT_EQ(p.result.stats.all_reduces, 1);
  EXPECT_EQ(p.result.stats.all_gathers, 0);
}

}  // namespace
}  // namespace podsim::compiler

namespace podsim::compiler {
namespace {

// Sweep of 1-D convolutions: kernel 1-3, stride 1-2, dilation 1-2, padding
// 0-1 each side on an uneven spatial dim (11) over 2 and 4 devices, output
// spatially tiled: halo exchange (or fallback) must match the whole conv.
TEST(SpmdConv, SpatialWindowSweep) {
  int handled = 0, total = 0;
  for (int n : {2, 4})
    for (int size = 1; size <= 3; ++size)
      for (int stride = 1; stride <= 2; ++stride)
        for (int dilation = 1; dilation <= 2; ++dilation)
          for (int lo = 0; lo <= 1; ++lo)
            for (int hi = 0; hi <= 1; ++hi) {
              const int reach = (size - 1) * dilation + 1;
              const int out = (11 + lo + hi - reach) / stride + 1;
              const std::string ns = std::to_string(n);
              auto p = partition(
                  dot_module("  x = f32[2,11,3] parameter(0), sharding={devices=[1," + ns +
                             ",1]<=[" + ns +
                             "]}\n"
                             "  k = f32[" +
                             std::to_string(size) +
                             ",3,2] parameter(1), sharding={replicated}\n"
                             "  ROOT c = f32[2," +
                             std::to_string(out) +
                             ",2] convolution(x, k), window={size=" + std::to_string(size) +
                             " stride=" + std::to_string(stride) + " pad=" + std::to_string(lo) +
                             "_" + std::to_string(hi) + " rhs_dilate=" + std::to_string(dilation) +
                             "}, dim_labels=b0f_0io->b0f, sharding={devices=[1," + ns + ",1]<=[" +
                             ns + "]}\n"),
                  n);
              VerifyResult v = verify_partitioning(p.annotated, p.result.module, 5, 1e-4);
              ASSERT_TRUE(v.ok) << "n " << n << " size " << size << " stride " << stride
                                << " dilation " << dilation << " pad " << lo << "_" << hi << ": "
                                << v.first_mismatch;
              handled += p.result.stats.default_fallbacks == 0;
              ++total;
            }
  EXPECT_EQ(handled, total);
}

}  // namespace
}  // namespace podsim::compiler

namespace podsim::compiler {
namespace {

TEST(SpmdConv, PartitionConvWithFeatureGroupCount) {
  // 4 feature groups (input feature 8 = 4 x 2, output feature 12 = 4 x 3);
  // input feature, kernel output feature and output tiled 2 ways alike:
  // each device convolves 2 whole groups locally, no collective.
  auto p = partition(
      dot_module(
          "  x = f32[2,6,8] parameter(0), sharding={devices=[1,1,2]<=[2]}\n"
          "  k = f32[3,2,12] parameter(1), sharding={devices=[1,1,2]<=[2]}\n"
          "  ROOT c = f32[2,6,12] convolution(x, k), window={size=3 pad=1_1}, "
          "dim_labels=b0f_0io->b0f, feature_group_count=4, sharding={devices=[1,1,2]<=[2]}\n"),
      2);
  expect_equivalent(p);
  EXPECT_EQ(
      p.result.stats.all_gathers + p.result.stats.all_reduces + p.result.stats.default_fallbacks,
      0);
}

TEST(SpmdConv, FeatureGroupsNotDivisibleByTilesAreNotSplit) {
  // 2 groups, output tiled 4 ways on the feature: a 4-way split would cut
  // groups, so the plan keeps the group dim whole (2-way at most) and the
  // result is sliced to the target afterwards; still equivalent, no fallback.
  auto p = partition(
      dot_module(
          "  x = f32[2,6,4] parameter(0), sharding={replicated}\n"
          "  k = f32[3,2,8] parameter(1), sharding={replicated}\n"
          "  ROOT c = f32[2,6,8] convolution(x, k), window={size=3 pad=1_1}, "
          "dim_labels=b0f_0io->b0f, feature_group_count=2, sharding={devices=[1,1,4]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.default_fallbacks, 0);
}

}  // namespace
}  // namespace podsim::compiler
