// Digit steps up to a relabeling (reshard.h RelabeledDigitPlan,
// reshard_relabel.cc) and the greedy digit planner's multi-step moves: the
// reshards that used to gather (or fully replicate) because a digit had to
// land at a non-minor place, or because one dim's digits split over two
// dims. Every case is checked for numeric equivalence, and the collectives
// are derived in the comments.
//
// Device ids: for {devices=[...]<=[8]} the tile coordinates are read from
// the device id's binary digits g2 g1 g0 (d = 4 g2 + 2 g1 + g0), major dims
// taking the major digits; e.g. [4,2]<=[8] puts device d on row tile
// 2 g2 + g1 = d / 2 and column tile g0 = d % 2.
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
using spmd_test::total_collectives;

using Groups = std::vector<std::pair<int64_t, int64_t>>;

// [4,2] -> [2,4]: source rows (g2 g1), columns (g0); target rows (g2),
// columns (g1 g0). The all-to-all in the g1 pairs {d, d ^ 2} moves g1 to
// the minor end of the columns, giving columns (g0 g1); the target wants
// (g1 g0), which is the same tile shape with g0 and g1 exchanged: one
// collective-permute. Shards are equal (4 x 8 = 8 x 4 = 32 elements), so
// the permute goes last.
TEST(ReshardRelabel, PlanForTheMajorPositionMove) {
  const Sharding from = parse_sharding("{devices=[4,2]<=[8]}");
  const Sharding to = parse_sharding("{devices=[2,4]<=[8]}");
  const int64_t dims[] = {16, 16};
  const auto plan = plan_relabeled_digit_reshard(from, to, dims, 8);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->permute, RelabeledDigitPlan::Permute::kLast);
  ASSERT_EQ(plan->steps.size(), 1u);
  EXPECT_EQ(plan->steps[0].kind, DigitStep::Kind::kMove);
  EXPECT_EQ(plan->steps[0].from_dim, 0);
  EXPECT_EQ(plan->steps[0].dim, 1);
  EXPECT_EQ(plan->steps[0].factor, 2);
  // Without the relabeling the same pair needs two gathers (g1 of the rows,
  // g0 of the columns) and a local slice by (g1 g0).
  const auto plain = plan_digit_reshard(from, to, dims, 8);
  ASSERT_TRUE(plain.has_value());
  int gathers = 0;
  for (const DigitStep& step : *plain) gathers += step.kind == DigitStep::Kind::kCoarsen ? 1 : 0;
  EXPECT_EQ(gathers, 2);
}

// The cache answers what the planner answers, and a second request for the
// same (source, target, dims, devices, element bytes) is the remembered plan
// (the same object), while another element size is another entry.
TEST(ReshardRelabel, PlanCacheRemembersThePlannersAnswer) {
  const Sharding from = parse_sharding("{devices=[4,2]<=[8]}");
  const Sharding to = parse_sharding("{devices=[2,4]<=[8]}");
  const int64_t dims[] = {16, 16};
  RelabeledPlanCache cache;
  const auto& first = cache.plan(from, to, dims, 8, 4);
  const auto direct = plan_relabeled_digit_reshard(from, to, dims, 8, 4);
  ASSERT_TRUE(first.has_value() && direct.has_value());
  EXPECT_EQ(first->permute, direct->permute);
  ASSERT_EQ(first->steps.size(), direct->steps.size());
  EXPECT_EQ(first->steps[0].after, direct->steps[0].after);
  EXPECT_EQ(&cache.plan(from, to, dims, 8, 4), &first);
  EXPECT_EQ(cache.size(), 1u);
  (void)cache.plan(from, to, dims, 8, 2);
  EXPECT_EQ(cache.size(), 2u);
}

// The reshard plans weigh one collective's latency (L bytes) against the
// bytes it moves. [2,4] -> [4,2] on f32[8,8] (shard 4 x 2 = 8 elements,
// 32 bytes): the relabeled plan is the all-to-all of the test
// above (output 8 elements, cost 32 / 2 + L) and a permute (32 + L):
// 48 + 2L; the single-collective plan gathers the columns' (g1 g0) whole
// (output 4 x 8 = 32 elements, 128 bytes: 3/4 of it + L = 96 + L) and
// slices locally. So the gather wins iff 96 + L < 48 + 2L <=> L > 48:
// TPUv3's L = 1e5 (kCollectiveLatencyBytes) picks it, a fabric without
// latency (L = 0) the two collectives.
TEST(ReshardRelabel, CollectiveLatencyDecidesBetweenOneGatherAndTwoCollectives) {
  const Sharding from = parse_sharding("{devices=[2,4]<=[8]}");
  const Sharding to = parse_sharding("{devices=[4,2]<=[8]}");
  const int64_t dims[] = {8, 8};
  const auto with_latency =
      plan_relabeled_digit_reshard(from, to, dims, 8, 4, kCollectiveLatencyBytes);
  ASSERT_TRUE(with_latency.has_value());
  EXPECT_EQ(with_latency->permute, RelabeledDigitPlan::Permute::kNone);
  EXPECT_DOUBLE_EQ(digit_steps_cost(with_latency->steps, dims, 4, kCollectiveLatencyBytes),
                   96 + kCollectiveLatencyBytes);
  const auto without = plan_relabeled_digit_reshard(from, to, dims, 8, 4, 0.0);
  ASSERT_TRUE(without.has_value());
  EXPECT_EQ(without->permute, RelabeledDigitPlan::Permute::kLast);
  EXPECT_DOUBLE_EQ(digit_steps_cost(without->steps, dims, 4, 0.0), 16);  // + the permute's 32
  // The boundary: at L = 47 the two collectives still win, at L = 49 the gather.
  EXPECT_EQ(plan_relabeled_digit_reshard(from, to, dims, 8, 4, 47)->permute,
            RelabeledDigitPlan::Permute::kLast);
  EXPECT_EQ(plan_relabeled_digit_reshard(from, to, dims, 8, 4, 49)->permute,
            RelabeledDigitPlan::Permute::kNone);
  // A cache plans with its own latency.
  RelabeledPlanCache no_latency(0.0);
  EXPECT_EQ(no_latency.plan(from, to, dims, 8, 4)->permute, RelabeledDigitPlan::Permute::kLast);

  // The partitioner takes the latency from its options
  // (SpmdOptions::collective_latency_bytes); both programs compute the copy.
  SpmdOptions options{8};
  auto gathered =
      partition_text(copy_module("8,8", "{devices=[2,4]<=[8]}", "{devices=[4,2]<=[8]}"), options);
  expect_equivalent(gathered);
  EXPECT_EQ(gathered.result.stats.all_gathers, 1);
  EXPECT_EQ(total_collectives(gathered.result.stats), 1);
  options.collective_latency_bytes = 0;
  auto moved =
      partition_text(copy_module("8,8", "{devices=[2,4]<=[8]}", "{devices=[4,2]<=[8]}"), options);
  expect_equivalent(moved);
  EXPECT_EQ(moved.result.stats.all_to_alls, 1);
  EXPECT_EQ(moved.result.stats.collective_permutes, 1);
  EXPECT_EQ(total_collectives(moved.result.stats), 2);
}

// The same on uneven dims that still nest: 11 rows, g1 leaves below g2
// (c = 2): ceil(11/2) = 6 = 2 * ceil(11/4); 11 columns, g1 joins below g0
// (c = 2): same. One all-to-all in 4 groups of 2, one permute.
TEST(ReshardRelabel, MajorPositionMoveOnUnevenDims) {
  auto p = partition_text(copy_module("11,11", "{devices=[4,2]<=[8]}", "{devices=[2,4]<=[8]}"), 8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.full_replications, 0);
  EXPECT_EQ(groups_of(p, Opcode::kAllToAll), (Groups{{2, 4}}));
  EXPECT_EQ(p.result.stats.collective_permutes, 1);
  EXPECT_EQ(total_collectives(p.result.stats), 2);
}

// Reverse direction [2,4] -> [4,2]: rows (g2) gain g1, which the source
// holds as the MAJOR column digit (g1 g0). Exchanging g0 and g1 in the
// target's lists gives rows (g2 g0), columns (g1): g0 is the minor column
// digit, so one all-to-all in the g0 pairs {d, d ^ 1} and one permute.
// Costs (reshard.h digit_steps_cost, L = 1e5 bytes per collective) on
// f32[512,384], shard 256 x 96 = 98304 bytes: the all-to-all's output is
// 128 x 192 (cost 98304 / 2 + L), the permute 98304 + L: 147456 + 2L. The
// plain plan gathers the columns' (g1 g0) whole (out 256 x 384: 3/4 of
// 393216 bytes + L = 294912 + L) and slices: 394912 in all, or gathers g0,
// moves g1 and slices (98304 + L twice: 396608). The relabeling wins by
// ~12%. (On a tiny shape the single gather would win on latency.)
TEST(ReshardRelabel, MajorDigitLeavesADim) {
  auto p =
      partition_text(copy_module("512,384", "{devices=[2,4]<=[8]}", "{devices=[4,2]<=[8]}"), 8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.full_replications, 0);
  EXPECT_EQ(groups_of(p, Opcode::kAllToAll), (Groups{{2, 4}}));
  EXPECT_EQ(p.result.stats.collective_permutes, 1);
  EXPECT_EQ(p.result.stats.all_gathers, 0);
}

// 3-D mesh [2,4,1] -> [1,4,2] on f32[5,8,7]: source (g2), (g1 g0), ();
// target (), (g2 g1), (g0). Dim 1 keeps 4 tiles, so GSPMD's rung moves the
// 2 tiles of dim 0 to dim 2 and fixes the order: relabeled target (),
// (g1 g0), (g2) is reached by one all-to-all in the g2 pairs {d, d ^ 4}
// (dims 0 and 2 have c = 1, so 5 and 7 need no nesting); one permute.
TEST(ReshardRelabel, ThreeDimMeshMoveAroundAKeptDim) {
  auto p =
      partition_text(copy_module("5,8,7", "{devices=[2,4,1]<=[8]}", "{devices=[1,4,2]<=[8]}"), 8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.full_replications, 0);
  EXPECT_EQ(groups_of(p, Opcode::kAllToAll), (Groups{{2, 4}}));
  EXPECT_EQ(p.result.stats.collective_permutes, 1);
  EXPECT_EQ(total_collectives(p.result.stats), 2);
}

// One dim's digits split over two dims, no relabeling: [4,1,1] -> [1,2,2] on
// 4 devices, source (g1 g0), (), (); target (), (g1), (g0). The minor g0
// moves to dim 2 first (all-to-all in {0,1}, {2,3}), then g1 to dim 1 (in
// {0,2}, {1,3}): two all-to-alls of 2, no permute, no gather. (The old
// planner matched a dim's whole stripped list only, and replicated.)
TEST(ReshardRelabel, DigitsOfOneDimSplitOverTwoDims) {
  auto p =
      partition_text(copy_module("8,6,10", "{devices=[4,1,1]<=[4]}", "{devices=[1,2,2]<=[4]}"), 4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.full_replications, 0);
  EXPECT_EQ(groups_of(p, Opcode::kAllToAll), (Groups{{2, 2}, {2, 2}}));
  EXPECT_EQ(total_collectives(p.result.stats), 2);
}

// Partial replication on both sides: [2,2] x 2 replicas -> [1,4] x 2 on
// f32[8,8]: source (g2), (g1), replicas g0; target (), (g2 g1), replicas g0.
// The plain planner must strip both g2 and g1 (g1 leaves its major place):
// full replication. Relabelings with columns (g1 x) keep g1: x = g2 is an
// all-to-all of the g2 pairs (out 8 x 2 = 16 elements, receives 8), x = g0
// a local slice then a gather of g2 (out 16, receives 8); either way plus
// one permute of 16 elements: equal cost (bytes and latencies) and
// collective count. The tie goes to the plan with fewer gathers: the
// all-to-all (4 groups of 2).
TEST(ReshardRelabel, PartialReplicationBothSides) {
  auto p = partition_text(copy_module("8,8", "{devices=[2,2,2]<=[8] last_tile_dim_replicate}",
                                      "{devices=[1,4,2]<=[8] last_tile_dim_replicate}"),
                          8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.full_replications, 0);
  EXPECT_EQ(groups_of(p, Opcode::kAllToAll), (Groups{{2, 4}}));
  EXPECT_EQ(p.result.stats.all_gathers, 0);
  EXPECT_EQ(p.result.stats.collective_permutes, 1);
}

// Permute first: [2,2,2] on f32[8,8,8] (shard 4x4x4 = 64 elements) ->
// columns (g2 g1), replicas g0 (shard 8x2x8 = 128). Plain: g0 gathers to
// the replicas, then g2 and g1 must both be stripped: full replication.
// Relabeled columns (g1 g0), replicas g2: move g0 from dim 2 to dim 1
// (all-to-all of the g0 pairs, out 4x2x8 = 64, receives 32), gather dim
// 0's g2 (out 128, receives 64), one permute of min(64, 128) = 64: 160
// elements and 3 latencies; columns (g1 g2), replicas g0 costs the same
// (move g2 from dim 0, out 64, then gather g0, out 128) and has the same
// steps. Every other relabeling gathers more. The source shard is the
// smaller, so the permute goes first (the source relabeled by sigma^-1,
// then the same steps).
TEST(ReshardRelabel, PermuteGoesFirstWhenTheSourceShardIsSmaller) {
  const Sharding from = parse_sharding("{devices=[2,2,2]<=[8]}");
  const Sharding to = parse_sharding("{devices=[1,4,1,2]<=[8] last_tile_dim_replicate}");
  const int64_t dims[] = {8, 8, 8};
  const auto plan = plan_relabeled_digit_reshard(from, to, dims, 8);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->permute, RelabeledDigitPlan::Permute::kFirst);
  ASSERT_EQ(plan->steps.size(), 2u);
  EXPECT_EQ(plan->steps[0].kind, DigitStep::Kind::kMove);
  EXPECT_EQ(plan->steps[1].kind, DigitStep::Kind::kCoarsen);
  EXPECT_EQ(plan->steps.back().after, to);

  auto p = partition_text(copy_module("8,8,8", "{devices=[2,2,2]<=[8]}",
                                      "{devices=[1,4,1,2]<=[8] last_tile_dim_replicate}"),
                          8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.full_replications, 0);
  EXPECT_EQ(groups_of(p, Opcode::kAllToAll), (Groups{{2, 4}}));
  EXPECT_EQ(groups_of(p, Opcode::kAllGather), (Groups{{2, 4}}));
  EXPECT_EQ(p.result.stats.collective_permutes, 1);
}

// Prime-sized digits: [2,4] -> [1,8] on f32[8,16]. On the common grid the
// digits are d1 = d / 4 (size 2) and d0 = d % 4 (size 4): source (d1),
// (d0), target (), (d1 d0), and no relabeling exchanges a 2 with a 4, so
// every plan strips both dims: full replication (the old result). Cut into
// g2 g1 g0, the source is (g2), (g1 g0) and the target (), (g2 g1 g0);
// relabeled to (), (g1 g0 g2) it is one move of g2 to the minor end of
// dim 1 (all-to-all in the pairs {d, d ^ 4}: 4 groups of 2) and a permute.
TEST(ReshardRelabel, PrimeDigitsLetAFourExchangeWithTwos) {
  auto p = partition_text(copy_module("8,16", "{devices=[2,4]<=[8]}", "{devices=[1,8]<=[8]}"), 8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.full_replications, 0);
  EXPECT_EQ(groups_of(p, Opcode::kAllToAll), (Groups{{2, 4}}));
  EXPECT_EQ(p.result.stats.collective_permutes, 1);
  EXPECT_EQ(total_collectives(p.result.stats), 2);
}

// A refine waits for digits it must nest with: f32[3,5,6], source
// [2,1,2] x 2 in the order (g2, g0, g1) -- dim 0 (g2), dim 2 (g0),
// replicas g1 -- to [1,4,2] in the order (g1, g2, g0): dim 1 (g1 g2),
// dim 2 (g0). Taking g1 into dim 1 first (a local slice) would leave g2 to
// join below c = 2: ceil(5/2) = 3 != 2 * ceil(5/4) = 4, no nesting. So
// dim 0's g2 is gathered (c = 1 there: 4 groups of 2) and then dim 1 takes
// (g1 g2) in one local slice of the whole dim: one all-gather, nothing else.
TEST(ReshardRelabel, RefineWaitsForDigitsItMustNestWith) {
  auto p = partition_text(
      copy_module("3,5,6", "{devices=[2,1,2,2]<=[2,2,2]T(0,2,1) last_tile_dim_replicate}",
                  "{devices=[1,4,2]<=[2,2,2]T(1,0,2)}"),
      8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.full_replications, 0);
  EXPECT_EQ(groups_of(p, Opcode::kAllGather), (Groups{{2, 4}}));
  EXPECT_EQ(total_collectives(p.result.stats), 1);
}

// A relabeling that does not pay stays unused: [4,2] -> [2,2] x 2 replicas
// (rows g2, columns g1, replicas g0) is a gather of g0 and a move of g1
// (cost 32 + 32 on 16 x 16); exchanging g0 and g1 instead gathers g1 of
// the rows (32) and permutes (32): a tie, which the identity wins.
TEST(ReshardRelabel, IdentityWinsTies) {
  auto p = partition_text(copy_module("16,16", "{devices=[4,2]<=[8]}",
                                      "{devices=[2,2,2]<=[8] last_tile_dim_replicate}"),
                          8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.full_replications, 0);
  EXPECT_EQ(p.result.stats.collective_permutes, 0);
  EXPECT_EQ(groups_of(p, Opcode::kAllGather), (Groups{{2, 4}}));
  EXPECT_EQ(groups_of(p, Opcode::kAllToAll), (Groups{{2, 4}}));
}

// Extents that do not nest are not digit steps: [4,2] -> [2,4] on 13 rows
// would strip g1 below g2 with ceil(13/2) = 7 != 2 * ceil(13/4) = 8, in
// every relabeling that keeps g2 in the rows; the reshard must still be
// right (whatever rung takes it).
TEST(ReshardRelabel, NonNestingExtentsStayCorrect) {
  auto p = partition_text(copy_module("13,16", "{devices=[4,2]<=[8]}", "{devices=[2,4]<=[8]}"), 8);
  expect_equivalent(p);
}

}  // namespace
}  // namespace podsim::compiler
