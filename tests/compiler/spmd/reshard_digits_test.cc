// Refine / coarsen / move reshards (reshard.h DigitStep): tile counts that
// grow by taking replication digits (local slice), shrink into replication
// (all-gather within groups) or pass digits between dims (all-to-all), with
// no full replication. Every case is checked for numeric equivalence.
//
// Device ids: for [a,b]<=[b,a]T(1,0) the element (i, r) is device r*a + i;
// "digits" are tile_coordinates.h's (device / stride) % size pieces.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "compiler/spmd/reshard.h"
#include "tests/compiler/spmd/spmd_test_util.h"

namespace podsim::compiler {
namespace {

using spmd_test::copy_module;
using spmd_test::expect_equivalent;
using spmd_test::groups_of;
using spmd_test::partition_text;
using spmd_test::Partitioned;
using spmd_test::total_collectives;

using Groups = std::vector<std::pair<int64_t, int64_t>>;

// The brief's case, scaled to a [4,2] mesh: [4,2]<=[2,4]T(1,0) with the last
// dim replicated holds tile d % 4 on device d (replica r = d / 4);
// [8]<=[2,4]T(1,0) puts tile (d % 4) * 2 + d / 4 there, i.e. sub-tile r of
// its own tile: f32[32] shards of 8 -> a local slice of 4 at r * 4.
constexpr const char* kCoarse1d = "{devices=[4,2]<=[2,4]T(1,0) last_tile_dim_replicate}";
constexpr const char* kFine1d = "{devices=[8]<=[2,4]T(1,0)}";

TEST(ReshardDigits, RefineOneDimIsALocalSlice) {
  auto p = partition_text(copy_module("32", kCoarse1d, kFine1d), 8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.full_replications, 0);
  EXPECT_EQ(total_collectives(p.result.stats), 0);
}

// Reverse: device d gathers sub-tiles 0, 1 of tile d % 4 from d % 4 and
// d % 4 + 4: 4 groups of 2.
TEST(ReshardDigits, CoarsenOneDimGathersWithinReplicaGroups) {
  auto p = partition_text(copy_module("32", kFine1d, kCoarse1d), 8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.full_replications, 0);
  EXPECT_EQ(groups_of(p, Opcode::kAllGather), (Groups{{2, 4}}));
  EXPECT_EQ(total_collectives(p.result.stats), 1);
}

TEST(ReshardDigits, PlanOfTheBriefsDense1TCase) {
  // [32,16]<=[16,32]T(1,0) partial -> [512]<=[16,32]T(1,0) on f32[16384]:
  // shards of 512 -> 32, one refine by the 16 replicas (m = 16); reverse is
  // one coarsen whose groups are the 32 sets of 16 replicas.
  const Sharding coarse =
      parse_sharding("{devices=[32,16]<=[16,32]T(1,0) last_tile_dim_replicate}");
  const Sharding fine = parse_sharding("{devices=[512]<=[16,32]T(1,0)}");
  const int64_t dims[] = {16384};
  const auto refine = plan_digit_reshard(coarse, fine, dims, 512);
  ASSERT_TRUE(refine.has_value());
  ASSERT_EQ(refine->size(), 1u);
  EXPECT_EQ((*refine)[0].kind, DigitStep::Kind::kRefine);
  EXPECT_EQ((*refine)[0].factor, 16);
  EXPECT_EQ((*refine)[0].after, fine);
  const auto coarsen = plan_digit_reshard(fine, coarse, dims, 512);
  ASSERT_TRUE(coarsen.has_value());
  ASSERT_EQ(coarsen->size(), 1u);
  EXPECT_EQ((*coarsen)[0].kind, DigitStep::Kind::kCoarsen);
  EXPECT_EQ((*coarsen)[0].groups.group_size(512), 16);
  EXPECT_EQ((*coarsen)[0].groups.expand(512).size(), 32u);
}

// 2-D mesh [2,2,2]<=[8]: device 4a + 2b + c holds (a, b), replica c.
// [4,2]<=[2,2,2]T(0,2,1) orders (a, c, b): dim 0 = 2a + c, dim 1 = b, so
// dim 0 is refined by the replica digit: rows of 4 -> sub-rows of 2.
constexpr const char* kCoarse2d = "{devices=[2,2,2]<=[8] last_tile_dim_replicate}";
constexpr const char* kFine2d = "{devices=[4,2]<=[2,2,2]T(0,2,1)}";

TEST(ReshardDigits, RefineOnA2dMesh) {
  auto p = partition_text(copy_module("8,6", kCoarse2d, kFine2d), 8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.full_replications, 0);
  EXPECT_EQ(total_collectives(p.result.stats), 0);
}

TEST(ReshardDigits, CoarsenOnA2dMesh) {
  // Groups differ only in c: {4a+2b, 4a+2b+1}, 4 groups of 2.
  auto p = partition_text(copy_module("8,6", kFine2d, kCoarse2d), 8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.full_replications, 0);
  EXPECT_EQ(groups_of(p, Opcode::kAllGather), (Groups{{2, 4}}));
  EXPECT_EQ(total_collectives(p.result.stats), 1);
}

TEST(ReshardDigits, UnevenDimsThatDoNotNestAreNotDigitSteps) {
  // f32[10] over 4 then 8 tiles: ceil(10/4) = 3 != 2 * ceil(10/8) = 4, so
  // the fine tiles do not sit inside the coarse ones; the reshard still works
  // (through another rung) and stays equivalent.
  const int64_t dims[] = {10};
  EXPECT_FALSE(
      plan_digit_reshard(parse_sharding(kCoarse1d), parse_sharding(kFine1d), dims, 8).has_value());
  auto p = partition_text(copy_module("10", kCoarse1d, kFine1d), 8);
  expect_equivalent(p);
}

// [8,1] -> [4,2] on 8 devices (grid 1, 2, 8: digit 0 = d % 2, digit 1 =
// d / 2): dim 0's minor digit moves to dim 1, one all-to-all in the 4 groups
// {2i, 2i+1}.
TEST(ReshardDigits, MoveOfAMinorDigitIsOneAllToAll) {
  auto p = partition_text(copy_module("16,8", "{devices=[8,1]<=[8]}", "{devices=[4,2]<=[8]}"), 8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.full_replications, 0);
  EXPECT_EQ(groups_of(p, Opcode::kAllToAll), (Groups{{2, 4}}));
  EXPECT_EQ(total_collectives(p.result.stats), 1);
  // Uneven: 15 rows over 8 / 4 tiles (2 / 4 rows: 4 = 2 * 2 nests), 7 columns
  // over 2 (dim 1 starts whole: padded to 2 * 4 before the exchange).
  auto q = partition_text(copy_module("15,7", "{devices=[8,1]<=[8]}", "{devices=[4,2]<=[8]}"), 8);
  expect_equivalent(q);
  EXPECT_EQ(q.result.stats.full_replications, 0);
}

}  // namespace
}  // namespace podsim::compiler
