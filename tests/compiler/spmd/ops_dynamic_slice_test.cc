// dynamic-slice / dynamic-update-slice, iota, select, clamp, compare,
// convert and constants under SPMD partitioning (docs/reference/gspmd.md#partitioner-checklist
// items 10, 18, 19, 25). Start indices are s32 parameters, which the harness
// fills with values in [-8, 8], so XLA's clamping of out-of-range starts is
// exercised too. Collective counts are derived in each comment.
#include <gtest/gtest.h>

#include "tests/compiler/spmd/spmd_test_util.h"

namespace podsim::compiler {
namespace {

using spmd_test::expect_equivalent;
using spmd_test::partition_text;

std::string module(const std::string& body) { return "HloModule m\nENTRY e {\n" + body + "}\n"; }
std::string rows(int n) {
  return "{devices=[" + std::to_string(n) + ",1]<=[" + std::to_string(n) + "]}";
}

TEST(SpmdDynamicSlice, DynamicSliceAlongNonPartitionedDimension) {
  // Rows tiled, columns sliced: each device slices its own rows, no
  // communication (the start indices are replicated scalars).
  for (int n : {2, 4, 8}) {
    auto p = partition_text(
        module("  x = f32[8,6] parameter(0), sharding=" + rows(n) +
               "\n"
               "  i = s32[] parameter(1), sharding={replicated}\n"
               "  j = s32[] parameter(2), sharding={replicated}\n"
               "  ROOT d = f32[8,2] dynamic-slice(x, i, j), dynamic_slice_sizes={8,2}, sharding=" +
               rows(n) + "\n"),
        n);
    for (uint64_t seed : {1, 2, 3}) expect_equivalent(p, seed);
    EXPECT_EQ(spmd_test::total_collectives(p.result.stats), 0) << n;
  }
}

TEST(SpmdDynamicSlice, DynamicSliceAlongPartitionedDimension) {
  // The sliced dim 0 is tiled on a [2,2] mesh: it is all-gathered (one
  // all-gather along dim 0), columns stay tiled; the result is sliced to its
  // tiling locally: no full replication.
  auto p = partition_text(
      module("  x = f32[7,6] parameter(0), sharding={devices=[2,2]<=[4]}\n"
             "  i = s32[] parameter(1), sharding={replicated}\n"
             "  j = s32[] parameter(2), sharding={replicated}\n"
             "  ROOT d = f32[3,6] dynamic-slice(x, i, j), dynamic_slice_sizes={3,6}, "
             "sharding={devices=[2,2]<=[4]}\n"),
      4);
  for (uint64_t seed : {1, 4, 9}) expect_equivalent(p, seed);
  EXPECT_EQ(p.result.stats.all_gathers, 1);
  EXPECT_EQ(p.result.stats.full_replications, 0);
}

TEST(SpmdDynamicSlice, DynamicUpdateSliceAlongNonPartitionedDimension) {
  // Update [8,2] covers whole rows' dim: it takes the rows tiling, local DUS.
  auto p = partition_text(module("  x = f32[8,6] parameter(0), sharding=" + rows(4) +
                                 "\n"
                                 "  u = f32[8,2] parameter(1), sharding=" +
                                 rows(4) +
                                 "\n"
                                 "  i = s32[] parameter(2), sharding={replicated}\n"
                                 "  j = s32[] parameter(3), sharding={replicated}\n"
                                 "  ROOT d = f32[8,6] dynamic-update-slice(x, u, i, j), sharding=" +
                                 rows(4) + "\n"),
                          4);
  for (uint64_t seed : {1, 2, 3}) expect_equivalent(p, seed);
  EXPECT_EQ(spmd_test::total_collectives(p.result.stats), 0);
}

TEST(SpmdDynamicSlice, DynamicUpdateSliceAlongPartitionedDimension) {
  // Update of 3 rows into rows tiled n ways (uneven D = 13 for n = 2, 4, 8):
  // the replicated update is windowed into every tile and selected where the
  // tile's rows fall in [start, start+3): no communication.
  for (int n : {2, 4, 8}) {
    auto p =
        partition_text(module("  x = f32[13,4] parameter(0), sharding=" + rows(n) +
                              "\n"
                              "  u = f32[3,4] parameter(1), sharding={replicated}\n"
                              "  i = s32[] parameter(2), sharding={replicated}\n"
                              "  j = s32[] parameter(3), sharding={replicated}\n"
                              "  ROOT d = f32[13,4] dynamic-update-slice(x, u, i, j), sharding=" +
                              rows(n) + "\n"),
                       n);
    for (uint64_t seed : {1, 5, 6, 7}) expect_equivalent(p, seed);
    EXPECT_EQ(spmd_test::total_collectives(p.result.stats), 0) << n;
  }
}

TEST(SpmdDynamicSlice, DynamicUpdateSliceBothDimsOn2x4Mesh) {
  // Both dims tiled and updated; the update arrives tiled and is gathered to
  // replicated first (all-gathers, no full-replication fallback).
  auto p = partition_text(
      module(
          "  x = f32[6,9] parameter(0), sharding={devices=[2,4]<=[8]}\n"
          "  u = f32[2,3] parameter(1), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}\n"
          "  i = s32[] parameter(2), sharding={replicated}\n"
          "  j = s32[] parameter(3), sharding={replicated}\n"
          "  ROOT d = f32[6,9] dynamic-update-slice(x, u, i, j), sharding={devices=[2,4]<=[8]}\n"),
      8);
  for (uint64_t seed : {1, 2, 3}) expect_equivalent(p, seed);
  EXPECT_EQ(p.result.stats.full_replications, 0);
  EXPECT_EQ(p.result.stats.default_fallbacks, 0);
}

// The one iota of the partitioned entry (there must be exactly one).
std::vector<int64_t> iota_dims(const SpmdResult& r) {
  std::vector<int64_t> dims;
  int count = 0;
  for (const Instruction& instr : r.module.entry().instructions())
    if (instr.opcode == Opcode::kIota) {
      dims = instr.shape.dims();
      ++count;
    }
  EXPECT_EQ(count, 1);
  return dims;
}

TEST(SpmdIota, IotaAlongTileDimension) {
  // iota along the tiled dim: each device builds an iota of its shard shape
  // [ceil(13/n), 3] and adds its tile offset; no communication and no
  // full-size iota anywhere.
  for (int n : {2, 4, 8}) {
    auto p = partition_text(
        module("  ROOT i = s32[13,3] iota(), iota_dimension=0, sharding=" + rows(n) + "\n"), n);
    expect_equivalent(p);
    EXPECT_EQ(spmd_test::total_collectives(p.result.stats), 0);
    EXPECT_EQ(iota_dims(p.result), (std::vector<int64_t>{(13 + n - 1) / n, 3})) << n;
  }
}

TEST(SpmdIota, FloatIotaAlongTileDimensionOn2x4Mesh) {
  // f32 iota along dim 1 tiled 4 ways (offset converted to f32), dim 0
  // tiled 2 ways (no offset needed): shard [3,3].
  auto p = partition_text(
      module("  ROOT i = f32[5,10] iota(), iota_dimension=1, sharding={devices=[2,4]<=[8]}\n"), 8);
  expect_equivalent(p);
  EXPECT_EQ(spmd_test::total_collectives(p.result.stats), 0);
  EXPECT_EQ(iota_dims(p.result), (std::vector<int64_t>{3, 3}));
}

TEST(SpmdIota, IotaAlongNonTileDimensionOn3DMesh) {
  auto p = partition_text(module("  ROOT i = f32[4,6,5] iota(), iota_dimension=2, "
                                 "sharding={devices=[2,2,1,2]<=[8] last_tile_dim_replicate}\n"),
                          8);
  expect_equivalent(p);
  EXPECT_EQ(spmd_test::total_collectives(p.result.stats), 0);
  EXPECT_EQ(iota_dims(p.result), (std::vector<int64_t>{2, 3, 5}));
}

TEST(SpmdElementwise, SelectClampCompareConvertAlongShardedDims) {
  // Everything tiled alike on [2,2] with uneven dims; the clamp bounds are
  // scalars: no communication at all.
  auto p = partition_text(module("  x = f32[5,7] parameter(0), sharding={devices=[2,2]<=[4]}\n"
                                 "  y = f32[5,7] parameter(1), sharding={devices=[2,2]<=[4]}\n"
                                 "  lo = f32[] constant(-0.5)\n"
                                 "  hi = f32[] constant(0.5)\n"
                                 "  c = f32[5,7] clamp(lo, x, hi)\n"
                                 "  g = pred[5,7] compare(c, y), direction=GT\n"
                                 "  s = f32[5,7] select(g, c, y)\n"
                                 "  ROOT r = s32[5,7] convert(s), sharding={devices=[2,2]<=[4]}\n"),
                          4);
  expect_equivalent(p);
  EXPECT_EQ(spmd_test::total_collectives(p.result.stats), 0);
}

TEST(SpmdConstant, ConstantSliceReshard) {
  // A non-uniform constant tiled on a 1-D mesh is sliced per device locally.
  auto p = partition_text(
      module("  c = f32[6] constant({1, 2, 3, 4, 5, 6}), sharding={devices=[4]<=[4]}\n"
             "  x = f32[6] parameter(0), sharding={devices=[4]<=[4]}\n"
             "  ROOT a = f32[6] add(c, x), sharding={devices=[4]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(spmd_test::total_collectives(p.result.stats), 0);
}

TEST(SpmdConstant, UniformConstantIsBuiltAtShardSize) {
  // f32[9,4] of zeros tiled [4,1]: a scalar broadcast to the shard [3,4];
  // no constant of 36 elements appears in the program.
  auto p = partition_text(
      module("  c = f32[9,4] constant({{0,0,0,0},{0,0,0,0},{0,0,0,0},{0,0,0,0},{0,0,0,0},"
             "{0,0,0,0},{0,0,0,0},{0,0,0,0},{0,0,0,0}}), sharding=" +
             rows(4) +
             "\n"
             "  x = f32[9,4] parameter(0), sharding=" +
             rows(4) +
             "\n"
             "  ROOT a = f32[9,4] add(c, x), sharding=" +
             rows(4) + "\n"),
      4);
  expect_equivalent(p);
  for (const Instruction& instr : p.result.module.entry().instructions())
    if (instr.opcode == Opcode::kConstant) {
      EXPECT_LE(instr.shape.num_elements(), 4) << instr.name;
    }
}

}  // namespace
}  // namespace podsim::compiler
