// reduce_scatter_partial and split_reduce_scatter (reduce_scatter.cc): a
// partial sum over a group whose target tiles a dim by only part of the
// group (devices = data 2 x fsdp 4, device id = 4 x data + fsdp) becomes a
// reduce-scatter over that part and an all-reduce of the shard over the
// rest; the partitioned program matches the reference interpreter.
#include <gtest/gtest.h>

#include <string>

#include "compiler/sharding/sharding.h"
#include "compiler/spmd/reshard.h"
#include "tests/compiler/spmd/spmd_test_util.h"
#include "tests/test_files.h"

namespace podsim::compiler {
namespace {

using spmd_test::expect_equivalent;
using spmd_test::groups_of;
using spmd_test::partition_text;

using Groups = std::vector<std::vector<int64_t>>;

Sharding parse(const std::string& text) { return parse_sharding(text); }

ReplicaGroups all_devices() { return ReplicaGroups{}; }

TEST(SplitReduceScatter, TargetOnTheMinorAxisScattersInsideEachDataHalf) {
  // Target tile along dim 0 = fsdp = device % 4: the scatter groups differ
  // only in fsdp ({0..3}, {4..7}, member k = tile k); the all-reduce joins
  // the two holders of each tile ({i, 4 + i}).
  const auto split = split_reduce_scatter(
      Sharding::replicated(), parse("{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"),
      all_devices(), 2, 8);
  ASSERT_TRUE(split);
  EXPECT_EQ(split->dim, 0);
  EXPECT_EQ(split->scatter.expand(8), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(split->across.expand(8), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
}

TEST(SplitReduceScatter, TargetOnTheMajorAxisScattersAcrossTheHalves) {
  // Target tile along dim 1 = data = device / 4: scatter over {i, 4 + i}
  // (member k = data k), all-reduce inside each half.
  const auto split = split_reduce_scatter(Sharding::replicated(),
                                          parse("{devices=[1,2,4]<=[8] last_tile_dim_replicate}"),
                                          all_devices(), 2, 8);
  ASSERT_TRUE(split);
  EXPECT_EQ(split->dim, 1);
  EXPECT_EQ(split->scatter.expand(8), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(split->across.expand(8), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
}

TEST(SplitReduceScatter, DoesNotApplyWhereAPlainReduceScatterOrNothingDoes) {
  const Sharding fsdp = parse("{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}");
  // The target splits the whole group: reduce_scatter_dim's case.
  EXPECT_FALSE(split_reduce_scatter(Sharding::replicated(), parse("{devices=[8,1]<=[8]}"),
                                    all_devices(), 2, 8));
  // Groups over fsdp only ({0..3}, {4..7}): a target tiled by data reads a
  // digit outside the group.
  ReplicaGroups fsdp_groups;
  fsdp_groups.iota = IotaGroups{2, 4, {8}, {}};
  EXPECT_FALSE(split_reduce_scatter(Sharding::replicated(),
                                    parse("{devices=[2,1,4]<=[8] last_tile_dim_replicate}"),
                                    fsdp_groups, 2, 8));
  // Two dims change.
  EXPECT_FALSE(split_reduce_scatter(Sharding::replicated(),
                                    parse("{devices=[2,2,2]<=[8] last_tile_dim_replicate}"),
                                    all_devices(), 2, 8));
  // Explicit groups have no digit form: the all-reduce stays.
  ReplicaGroups listed;
  listed.explicit_groups = {{0, 1, 2, 3, 4, 5, 6, 7}};
  EXPECT_FALSE(split_reduce_scatter(Sharding::replicated(), fsdp, listed, 2, 8));
  EXPECT_TRUE(split_reduce_scatter(Sharding::replicated(), fsdp, all_devices(), 2, 8));
}

TEST(SplitReduceScatter, DotPartialOverTwoAxesReduceScattersThenAllReducesAndVerifies) {
  // tests/fixtures/hlo/dot_partial_two_axes.hlo: the contracting dim (16)
  // is split over all 8 devices, the result [6, 10] wanted on fsdp only.
  // One reduce-scatter over 2 groups of 4 (6 padded to 8, shard 2 rows),
  // one all-reduce over 4 groups of 2; no all-reduce of the full result.
  const auto p = partition_text(
      test_files::read_source_file("tests/fixtures/hlo/dot_partial_two_axes.hlo"), 8);
  using G = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(groups_of(p, Opcode::kReduceScatter), (G{{4, 2}}));
  EXPECT_EQ(groups_of(p, Opcode::kAllReduce), (G{{2, 4}}));
  for (const Instruction& instr : p.result.module.entry().instructions()) {
    if (instr.opcode == Opcode::kAllReduce) {
      EXPECT_EQ(instr.shape, Shape(DType::kF32, {2, 10}));
    }
  }
  expect_equivalent(p);
  expect_equivalent(p, 7);
}

TEST(SplitReduceScatter, ReduceOverBothAxesToAMajorAxisTargetVerifies) {
  // A reduce of dim 1 (split over all 8 devices) whose [8, 6] result is
  // wanted on data only: reduce-scatter over {i, 4 + i}, all-reduce of the
  // [4, 6] shard inside each half.
  const std::string hlo = R"(HloModule m, num_partitions=8
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[8,16,6] parameter(0), sharding={devices=[1,8,1]<=[8]}
  z = f32[] constant(0)
  ROOT r = f32[8,6] reduce(p, z), dimensions={1}, to_apply=add, sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}
}
)";
  const auto p = partition_text(hlo, 8);
  using G = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(groups_of(p, Opcode::kReduceScatter), (G{{2, 4}}));
  EXPECT_EQ(groups_of(p, Opcode::kAllReduce), (G{{4, 2}}));
  expect_equivalent(p);
}

}  // namespace
}  // namespace podsim::compiler
