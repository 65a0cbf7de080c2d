// gather / scatter under SPMD partitioning (docs/reference/gspmd.md#gather-and-scatter,
// #partitioner-checklist item 23). Indices are s32 parameters in [-8, 8] (the harness's range), so
// out-of-range indices (clamped by gather, skipped by scatter) occur. Collective counts follow from
// the strategy named in each comment.
#include <gtest/gtest.h>

#include "tests/compiler/spmd/spmd_test_util.h"

namespace podsim::compiler {
namespace {

using spmd_test::expect_equivalent;
using spmd_test::partition_text;

constexpr const char* kBodies = R"(
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
min {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] minimum(a, b)
}
assign {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
)";

std::string module(const std::string& body) {
  return std::string("HloModule m\n") + kBodies + "ENTRY e {\n" + body + "}\n";
}

const std::string kLookup =
    "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
    "slice_sizes={1,8}";

TEST(SpmdGather, PassthroughGather) {
  // Table [16,8] tiled on M (taken whole by each lookup): the output's M dim
  // inherits the tiling, indices replicated: no communication.
  for (int n : {2, 4, 8}) {
    const std::string m = "{devices=[1," + std::to_string(n) + "]<=[" + std::to_string(n) + "]}";
    auto p = partition_text(module("  t = f32[16,8] parameter(0), sharding=" + m +
                                   "\n"
                                   "  i = s32[5] parameter(1), sharding={replicated}\n"
                                   "  ROOT g = f32[5,8] gather(t, i), " +
                                   kLookup + ", sharding=" + m + "\n"),
                            n);
    expect_equivalent(p);
    EXPECT_EQ(spmd_test::total_collectives(p.result.stats), 0) << n;
  }
}

TEST(SpmdGather, IndexPassthroughGather) {
  // Indices [6,4] (implicit index vector) tiled on batch dim 0 over the
  // first axis of [2,2]; the table tiled on M over the second: the output
  // [6,4,8] is [2,1,2], each device gathers its tile: no communication.
  auto p = partition_text(
      module(
          "  t = f32[16,8] parameter(0), sharding={devices=[1,2,2]<=[2,2]T(1,0) "
          "last_tile_dim_replicate}\n"
          "  i = s32[6,4] parameter(1), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}\n"
          "  ROOT g = f32[6,4,8] gather(t, i), offset_dims={2}, collapsed_slice_dims={0}, "
          "start_index_map={0}, "
          "index_vector_dim=2, slice_sizes={1,8}, sharding={devices=[2,1,2]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(spmd_test::total_collectives(p.result.stats), 0);
}

TEST(SpmdGather, IndexPassthroughGatherUneven) {
  // 7 lookups over 4 devices: padded index rows only produce padded output.
  auto p = partition_text(module("  t = f32[16,8] parameter(0), sharding={replicated}\n"
                                 "  i = s32[7] parameter(1), sharding={devices=[4]<=[4]}\n"
                                 "  ROOT g = f32[7,8] gather(t, i), " +
                                 kLookup + ", sharding={devices=[4,1]<=[4]}\n"),
                          4);
  expect_equivalent(p);
  EXPECT_EQ(spmd_test::total_collectives(p.result.stats), 0);
}

TEST(SpmdGather, GatherPartitionedOnTrivialSliceDims) {
  // Embedding table tiled on the vocabulary (V = 13, uneven, and indices in
  // [-8, 8] are clamped to [0, 12] first): masked local lookups + one
  // all-reduce over the V tiles; the output is replicated.
  for (int n : {2, 4, 8}) {
    const std::string v = "{devices=[" + std::to_string(n) + ",1]<=[" + std::to_string(n) + "]}";
    auto p = partition_text(module("  t = f32[13,8] parameter(0), sharding=" + v +
                                   "\n"
                                   "  i = s32[6] parameter(1), sharding={replicated}\n"
                                   "  ROOT g = f32[6,8] gather(t, i), " +
                                   kLookup + ", sharding={replicated}\n"),
                            n);
    for (uint64_t seed : {1, 2, 3}) expect_equivalent(p, seed);
    EXPECT_EQ(p.result.stats.all_reduces, 1) << n;
    EXPECT_EQ(p.result.stats.all_gathers, 0) << n;
  }
}

TEST(SpmdGather, TrivialSliceGatherReduceScatters) {
  // Same lookup, output tiled on M over the same 4 devices in the same order:
  // the all-reduce + slice fuse into one reduce-scatter.
  auto p = partition_text(module("  t = f32[16,8] parameter(0), sharding={devices=[4,1]<=[4]}\n"
                                 "  i = s32[6] parameter(1), sharding={replicated}\n"
                                 "  ROOT g = f32[6,8] gather(t, i), " +
                                 kLookup + ", sharding={devices=[1,4]<=[4]}\n"),
                          4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.reduce_scatters, 1);
  EXPECT_EQ(p.result.stats.all_reduces, 0);
}

TEST(SpmdGather, TrivialSliceGatherOtherDeviceOrderAllReduces) {
  // As above but the output's M tiles run over the devices in reverse: the
  // reduce-scatter would hand tile k to group member k, the wrong device, so
  // the partial sums are all-reduced and sliced locally instead.
  auto p = partition_text(module("  t = f32[16,8] parameter(0), sharding={devices=[4,1]<=[4]}\n"
                                 "  i = s32[6] parameter(1), sharding={replicated}\n"
                                 "  ROOT g = f32[6,8] gather(t, i), " +
                                 kLookup + ", sharding={devices=[1,4]3,2,1,0}\n"),
                          4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.reduce_scatters, 0);
  EXPECT_EQ(p.result.stats.all_reduces, 1);
}

TEST(SpmdGather, TrivialSliceGatherTwoIndexComponentsOn2x2Mesh) {
  // Operand [6,5,4] tiled on dim 0 (slice 1) and dim 2 (taken whole); the
  // index vector (dim 1 of [7,2]) addresses dims 0 and 1: component 0 is
  // shifted and masked, component 1 (dim 1 replicated) is used as is.
  auto p =
      partition_text(module("  t = f32[6,5,4] parameter(0), sharding={devices=[2,1,2]<=[4]}\n"
                            "  i = s32[7,2] parameter(1), sharding={replicated}\n"
                            "  ROOT g = f32[7,2,4] gather(t, i), offset_dims={1,2}, "
                            "collapsed_slice_dims={0}, start_index_map={0,1}, "
                            "index_vector_dim=1, slice_sizes={1,2,4}, "
                            "sharding={devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}\n"),
                     4);
  for (uint64_t seed : {1, 2}) expect_equivalent(p, seed);
  EXPECT_EQ(p.result.stats.all_reduces, 1);
  EXPECT_EQ(p.result.stats.full_replications, 0);
}

TEST(SpmdGather, EmbeddingLookupOn3DMesh) {
  // [2,2,2] mesh: table [12,8] tiled on V (axis 0) and M (axis 1), indices
  // [6,4] tiled on batch over axis 2 is ignored by the trivial-slice path
  // (indices replicated); the masked partial lookups are summed over the V
  // pairs: one all-reduce, no full replication.
  auto p = partition_text(
      module(
          "  t = f32[12,8] parameter(0), sharding={devices=[2,2,2]<=[8] last_tile_dim_replicate}\n"
          "  i = s32[6,4] parameter(1), sharding={devices=[2,1,4]<=[4,2]T(1,0) "
          "last_tile_dim_replicate}\n"
          "  ROOT g = f32[6,4,8] gather(t, i), offset_dims={2}, collapsed_slice_dims={0}, "
          "start_index_map={0}, "
          "index_vector_dim=2, slice_sizes={1,8}, sharding={devices=[1,1,2,4]<=[2,2,2]T(1,0,2) "
          "last_tile_dim_replicate}\n"),
      8);
  for (uint64_t seed : {1, 2}) expect_equivalent(p, seed);
  EXPECT_EQ(p.result.stats.all_reduces, 1);
  EXPECT_EQ(p.result.stats.full_replications, 0);
}

TEST(SpmdScatter, PassthroughAndTrivialScatterOn2x2Mesh) {
  // Operand [10,6] tiled on rows (scattered into, window 1) and columns
  // (window dim taken whole): indices replicated and shifted per row tile,
  // updates tiled on columns: no communication.
  auto p =
      partition_text(module("  o = f32[10,6] parameter(0), sharding={devices=[2,2]<=[4]}\n"
                            "  i = s32[5] parameter(1), sharding={replicated}\n"
                            "  u = f32[5,6] parameter(2), sharding={devices=[1,2,2]<=[2,2]T(1,0) "
                            "last_tile_dim_replicate}\n"
                            "  ROOT s = f32[10,6] scatter(o, i, u), update_window_dims={1}, "
                            "inserted_window_dims={0}, "
                            "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add, "
                            "sharding={devices=[2,2]<=[4]}\n"),
                     4);
  for (uint64_t seed : {1, 2, 3}) expect_equivalent(p, seed);
  EXPECT_EQ(spmd_test::total_collectives(p.result.stats), 0);
}

TEST(SpmdGather, TrivialSliceGatherOnBothTiledDimsWithLeadingIndexVector) {
  // Point lookups t[i0, i1] with the index vector in dim 0 of indices [2,5];
  // t [6,7] tiled on both dims of a [2,2] mesh (7 uneven): both components
  // are shifted and masked, partial sums all-reduced over all 4 devices.
  auto p = partition_text(
      module(
          "  t = f32[6,7] parameter(0), sharding={devices=[2,2]<=[4]}\n"
          "  i = s32[2,5] parameter(1), sharding={replicated}\n"
          "  ROOT g = f32[5] gather(t, i), offset_dims={}, collapsed_slice_dims={0,1}, "
          "start_index_map={0,1}, index_vector_dim=0, slice_sizes={1,1}, sharding={replicated}\n"),
      4);
  for (uint64_t seed : {1, 2, 3}) expect_equivalent(p, seed);
  EXPECT_EQ(p.result.stats.all_reduces, 1);
  EXPECT_EQ(p.result.stats.all_gathers, 0);
}

const std::string kScatterDims =
    "update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
    "index_vector_dim=1";

TEST(SpmdScatter, PassthroughScatter) {
  // Operand and updates tiled on the window dim M: local scatter.
  for (int n : {2, 4}) {
    const std::string m = "{devices=[1," + std::to_string(n) + "]<=[" + std::to_string(n) + "]}";
    auto p = partition_text(module("  o = f32[16,8] parameter(0), sharding=" + m +
                                   "\n"
                                   "  i = s32[6] parameter(1), sharding={replicated}\n"
                                   "  u = f32[6,8] parameter(2), sharding=" +
                                   m +
                                   "\n"
                                   "  ROOT s = f32[16,8] scatter(o, i, u), " +
                                   kScatterDims + ", to_apply=add, sharding=" + m + "\n"),
                            n);
    expect_equivalent(p);
    EXPECT_EQ(spmd_test::total_collectives(p.result.stats), 0) << n;
  }
}

TEST(SpmdScatter, ScatterPartitionedOnTrivialSliceDims) {
  // Operand tiled on the scattered-into rows (V = 13, uneven): indices
  // shifted into each tile, others fall out of range and are skipped.
  for (int n : {2, 4, 8}) {
    const std::string v = "{devices=[" + std::to_string(n) + ",1]<=[" + std::to_string(n) + "]}";
    auto p = partition_text(module("  o = f32[13,4] parameter(0), sharding=" + v +
                                   "\n"
                                   "  i = s32[9] parameter(1), sharding={replicated}\n"
                                   "  u = f32[9,4] parameter(2), sharding={replicated}\n"
                                   "  ROOT s = f32[13,4] scatter(o, i, u), " +
                                   kScatterDims + ", to_apply=add, sharding=" + v + "\n"),
                            n);
    for (uint64_t seed : {1, 2, 3}) expect_equivalent(p, seed);
    EXPECT_EQ(spmd_test::total_collectives(p.result.stats), 0) << n;
  }
}

TEST(SpmdScatter, IndexPassthroughScatter) {
  // Indices and updates tiled on the batch dim (7 over 2 and 4: padded index
  // rows become -1 and are skipped); per-device scatter into zeros, one
  // all-reduce, then added to the replicated operand.
  for (int n : {2, 4}) {
    const std::string b = "{devices=[" + std::to_string(n) + "]<=[" + std::to_string(n) + "]}";
    const std::string bu = "{devices=[" + std::to_string(n) + ",1]<=[" + std::to_string(n) + "]}";
    auto p = partition_text(module("  o = f32[8,4] parameter(0), sharding={replicated}\n"
                                   "  i = s32[7] parameter(1), sharding=" +
                                   b +
                                   "\n"
                                   "  u = f32[7,4] parameter(2), sharding=" +
                                   bu +
                                   "\n"
                                   "  ROOT s = f32[8,4] scatter(o, i, u), " +
                                   kScatterDims + ", to_apply=add, sharding={replicated}\n"),
                            n);
    for (uint64_t seed : {1, 2, 3}) expect_equivalent(p, seed);
    EXPECT_EQ(p.result.stats.all_reduces, 1) << n;
    EXPECT_EQ(p.result.stats.all_gathers, 0) << n;
  }
}

TEST(SpmdScatter, IndexPassthroughScatterMin) {
  // minimum combiner: identity +inf; the result tiled on rows over the same
  // devices as the indices, so the combine is one reduce-scatter.
  auto p = partition_text(module("  o = f32[8,4] parameter(0), sharding={devices=[4,1]<=[4]}\n"
                                 "  i = s32[6] parameter(1), sharding={devices=[4]<=[4]}\n"
                                 "  u = f32[6,4] parameter(2), sharding={devices=[4,1]<=[4]}\n"
                                 "  ROOT s = f32[8,4] scatter(o, i, u), " +
                                 kScatterDims + ", to_apply=min, sharding={devices=[4,1]<=[4]}\n"),
                          4);
  for (uint64_t seed : {1, 2}) expect_equivalent(p, seed);
  EXPECT_EQ(p.result.stats.reduce_scatters, 1);
  EXPECT_EQ(p.result.stats.all_reduces, 0);
}

TEST(SpmdScatter, AssignScatterWithTiledIndicesStaysCorrect) {
  // The combiner keeps the update (not reducible): indices and updates are
  // all-gathered and the operand-owned strategy scatters into each row tile;
  // duplicates resolve as in the unpartitioned program because every device
  // applies all updates in the same order.
  auto p =
      partition_text(module("  o = f32[8,4] parameter(0), sharding={devices=[2,1]<=[2]}\n"
                            "  i = s32[6] parameter(1), sharding={devices=[2]<=[2]}\n"
                            "  u = f32[6,4] parameter(2), sharding={devices=[2,1]<=[2]}\n"
                            "  ROOT s = f32[8,4] scatter(o, i, u), " +
                            kScatterDims + ", to_apply=assign, sharding={devices=[2,1]<=[2]}\n"),
                     2);
  for (uint64_t seed : {1, 2, 3}) expect_equivalent(p, seed);
  EXPECT_EQ(p.result.stats.all_reduces, 0);
  EXPECT_EQ(p.result.stats.full_replications, 0);
}

TEST(SpmdScatter, TrivialScatterWithTwoIndexComponentsOn2x2Mesh) {
  // Point updates o[i0, i1] += u with o [5,6] tiled on both dims: each
  // device keeps the updates that land in its tile: no communication.
  auto p =
      partition_text(module("  o = f32[5,6] parameter(0), sharding={devices=[2,2]<=[4]}\n"
                            "  i = s32[7,2] parameter(1), sharding={replicated}\n"
                            "  u = f32[7] parameter(2), sharding={replicated}\n"
                            "  ROOT s = f32[5,6] scatter(o, i, u), update_window_dims={}, "
                            "inserted_window_dims={0,1}, "
                            "scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=add, "
                            "sharding={devices=[2,2]<=[4]}\n"),
                     4);
  for (uint64_t seed : {1, 2, 3}) expect_equivalent(p, seed);
  EXPECT_EQ(spmd_test::total_collectives(p.result.stats), 0);
}

}  // namespace
}  // namespace podsim::compiler
