// verify_partitioning on tuple-shaped entry parameters and roots (a
// training step returns tuple(loss, new weights..., new slots...)): each
// leaf is sharded and reassembled with its own leaf sharding. Hand-written
// per-device programs check that a wrong leaf is caught and named; the
// partitioner's own output checks the end-to-end path.
#include <gtest/gtest.h>

#include "tests/compiler/spmd/spmd_test_util.h"

namespace podsim::compiler {
namespace {

using spmd_test::expect_equivalent;
using spmd_test::partition_text;

// x [8] tiled 4 ways; the root keeps both leaves tiled like x.
constexpr const char* kTupleRootAnnotated = R"(HloModule m, num_partitions=4
ENTRY e {
  x = f32[8] parameter(0), sharding={devices=[4]<=[4]}
  n = f32[8] negate(x), sharding={devices=[4]<=[4]}
  ROOT t = (f32[8], f32[8]) tuple(x, n), sharding={{devices=[4]<=[4]}, {devices=[4]<=[4]}}
}
)";

// The per-device program: each device holds x[2d : 2d+2].
constexpr const char* kTupleRootPartitioned = R"(HloModule m, num_partitions=4
ENTRY e {
  x = f32[2] parameter(0)
  n = f32[2] negate(x)
  ROOT t = (f32[2], f32[2]) tuple(x, n)
}
)";

TEST(VerifyTuple, TupleRootLeavesReassembledWithTheirShardings) {
  VerifyResult r =
      verify_partitioning(parse_hlo(kTupleRootAnnotated), parse_hlo(kTupleRootPartitioned));
  EXPECT_TRUE(r.ok) << r.first_mismatch;
  EXPECT_EQ(r.devices, 4);
  EXPECT_EQ(r.max_abs_error, 0.0);
}

TEST(VerifyTuple, WrongLeafIsCaughtAndNamed) {
  // Leaf 1 returns x instead of -x: random inputs are nonzero multiples of
  // 1/64 almost everywhere, so some element differs by 2|x| > 0.
  std::string wrong = kTupleRootPartitioned;
  wrong.replace(wrong.find("tuple(x, n)"), 11, "tuple(x, x)");
  VerifyResult r = verify_partitioning(parse_hlo(kTupleRootAnnotated), parse_hlo(wrong));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.first_mismatch.find("'t'{1}"), std::string::npos) << r.first_mismatch;
  EXPECT_GT(r.max_abs_error, 0.0);
}

TEST(VerifyTuple, ReplicatedRootLeafTakesEveryDevicesWholeValue) {
  // Leaf 1 replicated: each device must hold all 8 elements; the program
  // all-gathers its negated shard. Returning the shard (f32[2]) instead is a
  // shape mismatch.
  std::string annotated = kTupleRootAnnotated;
  annotated.replace(annotated.find("{devices=[4]<=[4]}}"), 19, "{replicated}}");
  const char* gathered = R"(HloModule m, num_partitions=4
ENTRY e {
  x = f32[2] parameter(0)
  n = f32[2] negate(x)
  g = f32[8] all-gather(n), dimensions={0}, replica_groups=[1,4]<=[4], use_global_device_ids=true, channel_id=1
  ROOT t = (f32[2], f32[8]) tuple(x, g)
}
)";
  VerifyResult ok = verify_partitioning(parse_hlo(annotated), parse_hlo(gathered));
  EXPECT_TRUE(ok.ok) << ok.first_mismatch;
  VerifyResult shard_only =
      verify_partitioning(parse_hlo(annotated), parse_hlo(kTupleRootPartitioned));
  EXPECT_FALSE(shard_only.ok);
  // Reported from the shapes, never read past the f32[2] (ASan finding).
  EXPECT_NE(shard_only.first_mismatch.find("needs at least [8]"), std::string::npos)
      << shard_only.first_mismatch;
}

// A tuple-shaped entry parameter with leaf shardings, a nested tuple root.
constexpr const char* kTupleParamAnnotated = R"(HloModule m, num_partitions=4
ENTRY e {
  p = (f32[8], f32[4,2]) parameter(0), sharding={{devices=[4]<=[4]}, {devices=[2,1,2]<=[4] last_tile_dim_replicate}}
  a = f32[8] get-tuple-element(p), index=0, sharding={devices=[4]<=[4]}
  b = f32[4,2] get-tuple-element(p), index=1, sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  inner = (f32[4,2], f32[8]) tuple(b, a), sharding={{devices=[2,1,2]<=[4] last_tile_dim_replicate}, {devices=[4]<=[4]}}
  ROOT t = (f32[8], (f32[4,2], f32[8])) tuple(a, inner), sharding={{devices=[4]<=[4]}, {devices=[2,1,2]<=[4] last_tile_dim_replicate}, {devices=[4]<=[4]}}
}
)";

// Device d holds a[2d : 2d+2] and b rows [2*(d/2), 2*(d/2)+2).
constexpr const char* kTupleParamPartitioned = R"(HloModule m, num_partitions=4
ENTRY e {
  p = (f32[2], f32[2,2]) parameter(0)
  a = f32[2] get-tuple-element(p), index=0
  b = f32[2,2] get-tuple-element(p), index=1
  inner = (f32[2,2], f32[2]) tuple(b, a)
  ROOT t = (f32[2], (f32[2,2], f32[2])) tuple(a, inner)
}
)";

TEST(VerifyTuple, TupleParameterShardedLeafByLeafAndNestedRoot) {
  VerifyResult r =
      verify_partitioning(parse_hlo(kTupleParamAnnotated), parse_hlo(kTupleParamPartitioned));
  EXPECT_TRUE(r.ok) << r.first_mismatch;
}

TEST(VerifyTuple, NestedLeafMismatchNamedByItsPath) {
  // The nested leaf (1, 1) negated: reported as {1}{1}.
  std::string wrong = kTupleParamPartitioned;
  wrong.replace(wrong.find("  inner ="), 0, "  na = f32[2] negate(a)\n");
  wrong.replace(wrong.find("tuple(b, a)"), 11, "tuple(b, na)");
  VerifyResult r = verify_partitioning(parse_hlo(kTupleParamAnnotated), parse_hlo(wrong));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.first_mismatch.find("{1}{1}"), std::string::npos) << r.first_mismatch;
}

TEST(VerifyTuple, OneLeafShardingOnATupleAppliesToEveryLeaf) {
  // sharding={devices=[4]<=[4]} on a (f32[8], f32[8]) value: both leaves tiled.
  const char* annotated = R"(HloModule m, num_partitions=4
ENTRY e {
  p = (f32[8], f32[8]) parameter(0), sharding={devices=[4]<=[4]}
  a = f32[8] get-tuple-element(p), index=0, sharding={devices=[4]<=[4]}
  b = f32[8] get-tuple-element(p), index=1, sharding={devices=[4]<=[4]}
  s = f32[8] add(a, b), sharding={devices=[4]<=[4]}
  ROOT t = (f32[8], f32[8]) tuple(s, a), sharding={devices=[4]<=[4]}
}
)";
  const char* partitioned = R"(HloModule m, num_partitions=4
ENTRY e {
  p = (f32[2], f32[2]) parameter(0)
  a = f32[2] get-tuple-element(p), index=0
  b = f32[2] get-tuple-element(p), index=1
  s = f32[2] add(a, b)
  ROOT t = (f32[2], f32[2]) tuple(s, a)
}
)";
  VerifyResult r = verify_partitioning(parse_hlo(annotated), parse_hlo(partitioned));
  EXPECT_TRUE(r.ok) << r.first_mismatch;
}

TEST(VerifyTuple, PartitionerTupleRootEndToEnd) {
  // The partitioner's program for a tuple root with differently sharded
  // leaves (row-tiled product, replicated column sum) verifies.
  auto p = partition_text(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[8,6] parameter(0), sharding={devices=[4,1]<=[4]}
  y = f32[8,6] parameter(1), sharding={devices=[4,1]<=[4]}
  m = f32[8,6] multiply(x, y)
  z = f32[] constant(0)
  c = f32[6] reduce(m, z), dimensions={0}, to_apply=add
  ROOT t = (f32[8,6], f32[6]) tuple(m, c), sharding={{devices=[4,1]<=[4]}, {replicated}}
}
)",
                          4);
  expect_equivalent(p);
}

TEST(VerifyTuple, ExplicitArgumentsAreShardedLikeRandomOnes) {
  // With arguments given, the devices get shards of exactly those values:
  // the per-device program below adds 1 to its shard, so it matches the
  // annotated program only where that adds 1 too.
  const char* annotated = R"(HloModule m, num_partitions=4
ENTRY e {
  x = f32[8] parameter(0), sharding={devices=[4]<=[4]}
  one = f32[] constant(1)
  b = f32[8] broadcast(one), dimensions={}, sharding={devices=[4]<=[4]}
  ROOT s = f32[8] add(x, b), sharding={devices=[4]<=[4]}
}
)";
  const char* partitioned = R"(HloModule m, num_partitions=4
ENTRY e {
  x = f32[2] parameter(0)
  one = f32[] constant(1)
  b = f32[2] broadcast(one), dimensions={}
  ROOT s = f32[2] add(x, b)
}
)";
  VerifyOptions options;
  options.arguments = {Literal(Shape(DType::kF32, {8}), {0, 1, 2, 3, 4, 5, 6, 7})};
  EXPECT_TRUE(verify_partitioning(parse_hlo(annotated), parse_hlo(partitioned), options).ok);
  // A program that ignores its input matches only for one particular input:
  // with all-zero arguments "1" is right, with 0..7 it is not.
  std::string constant_one = partitioned;
  constant_one.replace(constant_one.find("add(x, b)"), 9, "copy(b)");
  options.arguments = {Literal(Shape(DType::kF32, {8}))};
  EXPECT_TRUE(verify_partitioning(parse_hlo(annotated), parse_hlo(constant_one), options).ok);
  options.arguments = {Literal(Shape(DType::kF32, {8}), {0, 1, 2, 3, 4, 5, 6, 7})};
  EXPECT_FALSE(verify_partitioning(parse_hlo(annotated), parse_hlo(constant_one), options).ok);
}

TEST(VerifyTuple, BadArgumentsAndShardingsAreUserErrors) {
  VerifyOptions options;
  options.arguments = {Literal(Shape(DType::kF32, {8})),
                       Literal(Shape(DType::kF32, {8}))};  // one parameter
  EXPECT_THROW(verify_partitioning(parse_hlo(kTupleRootAnnotated), parse_hlo(kTupleRootPartitioned),
                                   options),
               UserError);
  options.arguments = {Literal(Shape(DType::kF32, {6}))};  // f32[8] expected
  EXPECT_THROW(verify_partitioning(parse_hlo(kTupleRootAnnotated), parse_hlo(kTupleRootPartitioned),
                                   options),
               UserError);
  // A 3-leaf tuple sharding on a 2-leaf root.
  std::string three_leaves = kTupleRootAnnotated;
  three_leaves.replace(three_leaves.find("sharding={{devices=[4]<=[4]}, {devices=[4]<=[4]}}"), 50,
                       "sharding={{devices=[4]<=[4]}, {devices=[4]<=[4]}, {replicated}}");
  EXPECT_THROW(verify_partitioning(parse_hlo(three_leaves), parse_hlo(kTupleRootPartitioned)),
               UserError);
}

}  // namespace
}  // namespace podsim::compiler
