// Windowed data movement under SPMD partitioning (docs/reference/gspmd.md#partitioner-checklist
// items 15, 16): slice, pad, concatenate and reverse along tiled dims use
// halo exchange (collective-permute), never an all-gather of the dim when the
// halo fits two neighbours per side. Each test checks numeric equivalence with
// the unpartitioned program (padding filled with a sentinel by the harness)
// and the collective kinds. Halo arithmetic in the comments: a dim of D
// elements in n tiles has shards of s = ceil(D/n) (tile j holds [j*s, j*s+s));
// a result of O elements has tiles of t = ceil(O/n).
#include <gtest/gtest.h>

#include "tests/compiler/spmd/spmd_test_util.h"

namespace podsim::compiler {
namespace {

using spmd_test::expect_equivalent;
using spmd_test::partition_text;

std::string module(const std::string& body) { return "HloModule m\nENTRY e {\n" + body + "}\n"; }

std::string tiled1d(int n) {
  return "{devices=[" + std::to_string(n) + "]<=[" + std::to_string(n) + "]}";
}
std::string rows(int n) {
  return "{devices=[" + std::to_string(n) + ",1]<=[" + std::to_string(n) + "]}";
}

void expect_no_gather(const SpmdResult& r) {
  EXPECT_EQ(r.stats.all_gathers, 0);
  EXPECT_EQ(r.stats.full_replications, 0);
  EXPECT_EQ(r.stats.default_fallbacks, 0);
}

TEST(SpmdSlice, SliceAlongPartitionedDimension) {
  // [16,4] rows on 4 devices, slice rows [2,14): O = 12, t = 3, s = 4. Tile j
  // needs [2+3j, 5+3j): j=0 reaches 1 past its shard (right halo 1), j=3
  // starts 1 before (left halo 1): one permute per side.
  auto p = partition_text(module("  x = f32[16,4] parameter(0), sharding=" + rows(4) +
                                 "\n"
                                 "  ROOT s = f32[12,4] slice(x), slice={[2:14], [0:4]}, sharding=" +
                                 rows(4) + "\n"),
                          4);
  expect_equivalent(p);
  expect_no_gather(p.result);
  EXPECT_EQ(p.result.stats.collective_permutes, 2);
}

TEST(SpmdSlice, SliceAlongPartitionedDimensionOn1DMeshes) {
  // Uneven D = 13 and O = 9 over 2/4/8 devices: the halo is at most one
  // neighbour (t <= s), so only permutes.
  for (int n : {2, 4, 8}) {
    auto p =
        partition_text(module("  x = f32[13,3] parameter(0), sharding=" + rows(n) +
                              "\n"
                              "  ROOT s = f32[9,3] slice(x), slice={[3:12], [0:3]}, sharding=" +
                              rows(n) + "\n"),
                       n);
    expect_equivalent(p, 11);
    expect_no_gather(p.result);
    EXPECT_GE(p.result.stats.collective_permutes, 1) << n;
  }
}

TEST(SpmdSlice, StridedSliceNeedsNoHalo) {
  // [16] on 2 devices, slice [1:15:3] -> O = 5, t = 3, s = 8: tile 0 reads
  // 1,4,7 (in [0,8)), tile 1 reads 10,13 (in [8,16)): no communication.
  auto p = partition_text(module("  x = f32[16] parameter(0), sharding=" + tiled1d(2) +
                                 "\n"
                                 "  ROOT s = f32[5] slice(x), slice={[1:15:3]}, sharding=" +
                                 tiled1d(2) + "\n"),
                          2);
  expect_equivalent(p);
  expect_no_gather(p.result);
  EXPECT_EQ(p.result.stats.collective_permutes, 0);
}

TEST(SpmdSlice, SliceTo1) {
  // [8,4] rows on 4 devices (s = 2), slice row 3: O = 1, only tile 0 holds
  // data and it needs row 3 from tile 1: one permute.
  auto p = partition_text(module("  x = f32[8,4] parameter(0), sharding=" + rows(4) +
                                 "\n"
                                 "  ROOT s = f32[1,4] slice(x), slice={[3:4], [0:4]}, sharding=" +
                                 rows(4) + "\n"),
                          4);
  expect_equivalent(p);
  expect_no_gather(p.result);
  EXPECT_EQ(p.result.stats.collective_permutes, 1);
}

TEST(SpmdSlice, SliceToMiddle2) {
  // [16] on 8 devices (s = 2), slice [4:12): t = 1, tile j needs element 4+j
  // held by tile (4+j)/2: at most 3 elements left or right -> 2 pieces per
  // side (distances 1 and 2), 4 permutes, no gather.
  auto p = partition_text(module("  x = f32[16] parameter(0), sharding=" + tiled1d(8) +
                                 "\n"
                                 "  ROOT s = f32[8] slice(x), slice={[4:12]}, sharding=" +
                                 tiled1d(8) + "\n"),
                          8);
  expect_equivalent(p);
  expect_no_gather(p.result);
  EXPECT_EQ(p.result.stats.collective_permutes, 4);
}

TEST(SpmdSlice, SliceFarFromOwnerGathersOnlyThatDim) {
  // [64,4] on [8,... ] rows, slice rows [60:62): tile 0 needs rows held 7
  // shards away (> 2 pieces): one all-gather along dim 0, no full
  // replication, no permute.
  auto p = partition_text(module("  x = f32[64,4] parameter(0), sharding=" + rows(8) +
                                 "\n"
                                 "  ROOT s = f32[2,4] slice(x), slice={[60:62], [0:4]}, sharding=" +
                                 rows(8) + "\n"),
                          8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_gathers, 1);
  EXPECT_EQ(p.result.stats.collective_permutes, 0);
  EXPECT_EQ(p.result.stats.full_replications, 0);
}

TEST(SpmdSlice, SliceOn2x2MeshBothDims) {
  // [8,8] on [2,2], slice [1:7, 2:8] -> [6,6], t = 3, s = 4. Dim 0: tile 0
  // reads [1,4), tile 1 [4,7): both inside their shards. Dim 1: tile 0 reads
  // [2,5) (right halo 1), tile 1 [5,8): one permute in total.
  auto p = partition_text(
      module("  x = f32[8,8] parameter(0), sharding={devices=[2,2]<=[4]}\n"
             "  ROOT s = f32[6,6] slice(x), slice={[1:7], [2:8]}, sharding={devices=[2,2]<=[4]}\n"),
      4);
  expect_equivalent(p);
  expect_no_gather(p.result);
  EXPECT_EQ(p.result.stats.collective_permutes, 1);
}

TEST(SpmdSlice, SliceOn3DMeshWithPartialReplication) {
  // [2,2,2] mesh: dim 0 tiled 2, dim 2 tiled 2, last mesh axis replicates.
  auto p = partition_text(module("  x = f32[7,3,9] parameter(0), sharding={devices=[2,1,2,2]<=[8] "
                                 "last_tile_dim_replicate}\n"
                                 "  ROOT s = f32[5,3,4] slice(x), slice={[1:6], [0:3], [1:9:2]}, "
                                 "sharding={devices=[2,1,2,2]<=[8] last_tile_dim_replicate}\n"),
                          8);
  expect_equivalent(p, 5);
  expect_no_gather(p.result);
}

TEST(SpmdPad, PadAlongPartitionedDimension) {
  // [8] on 4 (s = 2), pad low 2 high 1 -> O = 11, t = 3. Tile j needs inputs
  // [3j-2, 3j+1) clipped to [0,8): j=1 needs [1,4) (left halo 1), j=2 needs
  // [4,7) (right halo 1): one permute per side.
  auto p = partition_text(module("  x = f32[8] parameter(0), sharding=" + tiled1d(4) +
                                 "\n"
                                 "  z = f32[] constant(0.5)\n"
                                 "  ROOT p = f32[11] pad(x, z), padding=2_1, sharding=" +
                                 tiled1d(4) + "\n"),
                          4);
  expect_equivalent(p);
  expect_no_gather(p.result);
  EXPECT_EQ(p.result.stats.collective_permutes, 2);
}

TEST(SpmdPad, PadAlongPartitionedDimensionOn1DMeshes) {
  // [12] rows padded 3_2 -> O = 17. n = 2: t = 9, s = 6, tile 0 needs
  // inputs [0,6), tile 1 [6,12): its own shards, no permute. n = 4: t = 5,
  // s = 3, tile 1 needs [2,7) (halo both sides). n = 8: t = 3, s = 2, tile 0
  // is low padding only (all pad value), tile 2 needs [3,6) (halo).
  for (int n : {2, 4, 8}) {
    auto p = partition_text(module("  x = f32[12,3] parameter(0), sharding=" + rows(n) +
                                   "\n"
                                   "  z = f32[] constant(-2)\n"
                                   "  ROOT p = f32[17,3] pad(x, z), padding=3_2x0_0, sharding=" +
                                   rows(n) + "\n"),
                            n);
    expect_equivalent(p, 2);
    expect_no_gather(p.result);
    if (n == 2) {
      EXPECT_EQ(p.result.stats.collective_permutes, 0);
    }
    if (n > 2) {
      EXPECT_GE(p.result.stats.collective_permutes, 1) << n;
    }
  }
}

TEST(SpmdPad, PadAlongPartitionedDimensionWithInteriorPadding) {
  // [8] on 4, low 3 interior 1 -> O = 3 + 8 + 7 = 18, t = 5, r = 2. Tile j
  // needs inputs ceil((5j-3)/2) .. floor((5j+1)/2): j=1 needs [1,4) (left
  // halo 1 from tile 0), the others stay inside their shards: one permute.
  auto p = partition_text(module("  x = f32[8] parameter(0), sharding=" + tiled1d(4) +
                                 "\n"
                                 "  z = f32[] constant(0.25)\n"
                                 "  ROOT p = f32[18] pad(x, z), padding=3_0_1, sharding=" +
                                 tiled1d(4) + "\n"),
                          4);
  expect_equivalent(p);
  expect_no_gather(p.result);
  EXPECT_EQ(p.result.stats.collective_permutes, 1);
}

TEST(SpmdPad, PadInteriorOnDimSmallerThanTileCount) {
  // f32[1] over 2 with padding 1_0_1 -> [c, x]: tile 0 (t = 1) holds only
  // low padding, no input element, and must read the pad value (found by
  // the property test); likewise f32[2] over 6 with 2_1_2 -> O = 7.
  auto p = partition_text(module("  x = f32[1] parameter(0), sharding=" + tiled1d(2) +
                                 "\n"
                                 "  z = f32[] constant(-0.5)\n"
                                 "  ROOT p = f32[2] pad(x, z), padding=1_0_1, sharding=" +
                                 tiled1d(2) + "\n"),
                          2);
  expect_equivalent(p);
  auto q = partition_text(module("  x = f32[2] parameter(0), sharding=" + tiled1d(6) +
                                 "\n"
                                 "  z = f32[] constant(-0.5)\n"
                                 "  ROOT p = f32[7] pad(x, z), padding=2_1_2, sharding=" +
                                 tiled1d(6) + "\n"),
                          6);
  expect_equivalent(q);
}

TEST(SpmdPad, PadUneven) {
  // [7,5] on [2,2] (shards 4x3 with a padding row and column that the
  // harness fills with 37): pad both dims; the padding must come out as
  // the pad value, never as 37.
  auto p = partition_text(
      module("  x = f32[7,5] parameter(0), sharding={devices=[2,2]<=[4]}\n"
             "  z = f32[] constant(3)\n"
             "  ROOT p = f32[10,7] pad(x, z), padding=1_2x0_2, sharding={devices=[2,2]<=[4]}\n"),
      4);
  expect_equivalent(p);
  expect_no_gather(p.result);
}

TEST(SpmdPad, PadNegativeLowCropsOn2x4Mesh) {
  // Negative low padding crops: [9,8] -> [8,9] (dim 0 low -2 high 1, dim 1
  // low 0 high 1 interior 0) on a [2,4] mesh.
  auto p = partition_text(
      module("  x = f32[9,8] parameter(0), sharding={devices=[2,4]<=[8]}\n"
             "  z = f32[] constant(1)\n"
             "  ROOT p = f32[8,9] pad(x, z), padding=-2_1x0_1, sharding={devices=[2,4]<=[8]}\n"),
      8);
  expect_equivalent(p);
  expect_no_gather(p.result);
}

TEST(SpmdConcat, ConcatenateAlongPartitionedDimension) {
  // Two [8,4] on 2 devices -> [16,4], t = 8, s = 4: tile 0 is a whole (needs
  // a's second shard, right halo 4), tile 1 is b whole (left halo 4): two
  // permutes, no all-gather.
  auto p =
      partition_text(module("  a = f32[8,4] parameter(0), sharding=" + rows(2) +
                            "\n"
                            "  b = f32[8,4] parameter(1), sharding=" +
                            rows(2) +
                            "\n"
                            "  ROOT c = f32[16,4] concatenate(a, b), dimensions={0}, sharding=" +
                            rows(2) + "\n"),
                     2);
  expect_equivalent(p);
  expect_no_gather(p.result);
  EXPECT_EQ(p.result.stats.collective_permutes, 2);
}

TEST(SpmdConcat, ConcatenateAlongPartitionedDimensionUnevenOn1DMeshes) {
  // a [5,3] and b [3,3] -> [8,3]; on 8 devices the halos exceed two
  // neighbours and dim 0 is all-gathered instead: correct either way, never
  // a full replication.
  for (int n : {2, 4, 8}) {
    auto p =
        partition_text(module("  a = f32[5,3] parameter(0), sharding=" + rows(n) +
                              "\n"
                              "  b = f32[3,3] parameter(1), sharding=" +
                              rows(n) +
                              "\n"
                              "  ROOT c = f32[8,3] concatenate(a, b), dimensions={0}, sharding=" +
                              rows(n) + "\n"),
                       n);
    expect_equivalent(p, 4);
    EXPECT_EQ(p.result.stats.full_replications, 0) << n;
    if (n == 2) {
      EXPECT_EQ(p.result.stats.all_gathers, 0);
    }
  }
}

TEST(SpmdConcat, ConcatenateMovesTilesWhenHaloTooWide) {
  // a [5,8] and b [3,8] -> [8,8] rows over 8 devices (s = 1): result tile 3
  // needs a's rows 3.. from 3 neighbours away (> 2), so the rows' 8 tiles
  // move to the 8 columns (one all-to-all per operand), the concat is local,
  // and the tiles move back (one all-to-all): no all-gather.
  auto p =
      partition_text(module("  a = f32[5,8] parameter(0), sharding=" + rows(8) +
                            "\n"
                            "  b = f32[3,8] parameter(1), sharding=" +
                            rows(8) +
                            "\n"
                            "  ROOT c = f32[8,8] concatenate(a, b), dimensions={0}, sharding=" +
                            rows(8) + "\n"),
                     8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_to_alls, 3);
  EXPECT_EQ(p.result.stats.all_gathers + p.result.stats.full_replications, 0);
}

TEST(SpmdConcat, ConcatenateAlongNonPartitionedDimension) {
  // Concat along dim 1 while dim 0 is tiled on [2,2]'s first axis: local.
  auto p = partition_text(
      module(
          "  a = f32[6,3] parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}\n"
          "  b = f32[6,5] parameter(1), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}\n"
          "  ROOT c = f32[6,8] concatenate(a, b), dimensions={1}, "
          "sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(
      p.result.stats.all_gathers + p.result.stats.collective_permutes + p.result.stats.all_reduces,
      0);
}

TEST(SpmdReverse, TiledReverseSwapShards) {
  // [8] on 2 even: the operand's tiles swap devices (one permute), then a
  // local reverse; no halo.
  auto p = partition_text(module("  x = f32[8,2] parameter(0), sharding=" + rows(2) +
                                 "\n"
                                 "  ROOT r = f32[8,2] reverse(x), dimensions={0}, sharding=" +
                                 rows(2) + "\n"),
                          2);
  expect_equivalent(p);
  expect_no_gather(p.result);
  EXPECT_EQ(p.result.stats.collective_permutes, 1);
}

TEST(SpmdReverse, TiledReverseHaloExchange) {
  // [7] on 2 (s = 4, one padding element): swap (one permute) + a left halo
  // of n*s - D = 1 element (one permute), local reverse.
  for (int n : {2, 4, 8}) {
    auto p = partition_text(module("  x = f32[7,3] parameter(0), sharding=" + rows(n) +
                                   "\n"
                                   "  ROOT r = f32[7,3] reverse(x), dimensions={0,1}, sharding=" +
                                   rows(n) + "\n"),
                            n);
    expect_equivalent(p);
    expect_no_gather(p.result);
    EXPECT_EQ(p.result.stats.collective_permutes, 2) << n;
  }
}

TEST(SpmdReverse, ReverseOfSizeOneDimOverManyDevices) {
  // f32[3,1] tiled 8 ways on the size-1 dim: s = 1, padding n*s - D = 7
  // would need a 7-neighbour halo, beyond the cap: the dim is reversed whole
  // (an all-gather of that dim), still exact (found by the property test).
  auto p = partition_text(
      module("  x = f32[3,1] parameter(0), sharding={devices=[1,8]<=[8]}\n"
             "  ROOT r = f32[3,1] reverse(x), dimensions={0,1}, sharding={devices=[1,8]<=[8]}\n"),
      8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.full_replications, 0);
}

}  // namespace
}  // namespace podsim::compiler
