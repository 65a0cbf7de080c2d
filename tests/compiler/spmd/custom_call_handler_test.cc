// Custom-calls and manual regions in the partitioner (custom_call_handler.cc).
// Manual regions are checked numerically against a module without them that
// computes the same global function (the interpreter cannot run the original:
// its manual ops have per-device semantics); targets the interpreter does not
// know are checked on the program's shapes and collectives.
#include <gtest/gtest.h>

#include "tests/compiler/spmd/spmd_test_util.h"

namespace podsim::compiler {
namespace {

using spmd_test::partition_text;
using spmd_test::total_collectives;

const Instruction* find_target(const Module& m, const std::string& target) {
  for (const Instruction& instr : m.entry().instructions())
    if (instr.opcode == Opcode::kCustomCall && instr.attrs.custom_call_target == target)
      return &instr;
  return nullptr;
}

// The partitioned `manual` module computes what `reference` computes.
void expect_same_function(const std::string& manual, const std::string& reference,
                          int64_t devices) {
  Module ref = parse_hlo(reference);
  ref.set_num_partitions(devices);
  propagate_shardings(ref);
  auto p = partition_text(manual, devices);
  VerifyResult r = verify_partitioning(ref, p.result.module, 3, 1e-5);
  EXPECT_TRUE(r.ok) << r.first_mismatch << "\n" << print_hlo(p.result.module);
}

TEST(SpmdCustomCalls, UnknownTargetKeepsOperandShardingAndRunsOnTheShard) {
  // An opaque same-shape custom-call between sharded values: no collective,
  // the call runs on the [2,8] shard (XLA's default would all-gather to [8,8]).
  auto p = partition_text(R"(HloModule m
ENTRY e {
  x = f32[8,8] parameter(0), sharding={devices=[4,1]<=[4]}
  c = f32[8,8] custom-call(x), custom_call_target="my_kernel"
  ROOT n = f32[8,8] negate(c)
}
)",
                          4);
  EXPECT_EQ(total_collectives(p.result.stats), 0);
  const Instruction* call = find_target(p.result.module, "my_kernel");
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->shape.dims(), (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(p.annotated.entry().instr(p.annotated.entry().root()).sharding, "{devices=[4,1]<=[4]}");
}

TEST(SpmdCustomCalls, UnknownTargetOfAnotherShapeIsNotGatheredToFullSize) {
  // Result shape differs from the operand's: the result is replicated, the
  // operand stays a [2,8] shard (no all-gather of it).
  auto p = partition_text(R"(HloModule m
ENTRY e {
  x = f32[8,8] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT c = f32[3] custom-call(x), custom_call_target="summary"
}
)",
                          4);
  EXPECT_EQ(p.result.stats.all_gathers, 0);
  const Instruction* call = find_target(p.result.module, "summary");
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(p.result.module.entry().instr(call->operand(0)).shape.dims(),
            (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(call->shape.dims(), (std::vector<int64_t>{3}));
}

TEST(SpmdCustomCalls, PlacementCallsAreIdentityForSharding) {
  // MoveToHost / MoveToDevice / annotate_device_placement keep the operand's
  // tiling on both sides: no collective, every call on the [8,2] shard.
  auto p = partition_text(R"(HloModule m
ENTRY e {
  x = f32[8,8] parameter(0), sharding={devices=[1,4]<=[4]}
  h = f32[8,8] custom-call(x), custom_call_target="MoveToHost"
  d = f32[8,8] custom-call(h), custom_call_target="MoveToDevice"
  ROOT a = f32[8,8] custom-call(d), custom_call_target="annotate_device_placement"
}
)",
                          4);
  EXPECT_EQ(total_collectives(p.result.stats), 0);
  for (const char* target : {"MoveToHost", "MoveToDevice", "annotate_device_placement"}) {
    const Instruction* call = find_target(p.result.module, target);
    ASSERT_NE(call, nullptr) << target;
    EXPECT_EQ(call->shape.dims(), (std::vector<int64_t>{8, 2})) << target;
  }
}

TEST(SpmdCustomCalls, TopKKeepsTheBatchTilingLocal) {
  // TopK along the last dim of a batch-sharded [8,32]: local TopK on [2,32],
  // both results [2,3], no collective.
  auto p = partition_text(R"(HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT gt = pred[] compare(a, b), direction=GT
}
ENTRY e {
  x = f32[8,32] parameter(0), sharding={devices=[4,1]<=[4]}
  t = (f32[8,3], s32[8,3]) custom-call(x), custom_call_target="TopK", to_apply=cmp
  v = f32[8,3] get-tuple-element(t), index=0
  i = s32[8,3] get-tuple-element(t), index=1
  ROOT r = (f32[8,3], s32[8,3]) tuple(v, i)
}
)",
                          4);
  EXPECT_EQ(total_collectives(p.result.stats), 0);
  const Instruction* call = find_target(p.result.module, "TopK");
  ASSERT_NE(call, nullptr);
  ASSERT_TRUE(call->shape.is_tuple());
  EXPECT_EQ(call->shape.tuple_shape(0).dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(call->shape.tuple_shape(1).dims(), (std::vector<int64_t>{2, 3}));
}

TEST(SpmdCustomCalls, TopKShardedOnTheSortedDimMovesItsTilesToTheBatchDim) {
  // [8,32] tiled 4 ways on the sorted dim: the tiles move to dim 0 (8 % 4 = 0)
  // with one all-to-all instead of an all-gather of the whole row; the TopK
  // runs on [2,32].
  auto p = partition_text(R"(HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT gt = pred[] compare(a, b), direction=GT
}
ENTRY e {
  x = f32[8,32] parameter(0), sharding={devices=[1,4]<=[4]}
  t = (f32[8,3], s32[8,3]) custom-call(x), custom_call_target="TopK", to_apply=cmp
  ROOT v = f32[8,3] get-tuple-element(t), index=0, sharding={devices=[4,1]<=[4]}
}
)",
                          4);
  EXPECT_EQ(p.result.stats.all_gathers, 0);
  EXPECT_EQ(p.result.stats.full_replications, 0);
  const Instruction* call = find_target(p.result.module, "TopK");
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->shape.tuple_shape(0).dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(p.result.module.entry().instr(call->operand(0)).shape.dims(),
            (std::vector<int64_t>{2, 32}));
}

TEST(SpmdCustomCalls, OutfeedSendsTheLocalShardOfItsData) {
  // outfeed(x, token) annotated {devices=[4,1]}: XLA reads that as the data's
  // layout. x (unannotated) takes it, each device sends its [2,4] rows, and
  // the outfeed's token is replicated. Built from a parsed add/constant pair
  // retagged as outfeed/after-all (the reader may not type tokens yet).
  Module m = parse_hlo(R"(HloModule m
ENTRY e {
  x = f32[8,4] parameter(0)
  t = f32[] constant(0)
  ROOT o = f32[] add(t, t)
}
)");
  m.set_num_partitions(4);
  Computation& entry = m.mutable_computation(m.entry_id());
  Instruction& token = entry.mutable_instr(entry.find("t"));
  token.opcode = Opcode::kAfterAll;
  token.shape = Shape::scalar(DType::kToken);
  Instruction& outfeed = entry.mutable_instr(entry.root());
  outfeed.opcode = Opcode::kOutfeed;
  outfeed.operands = {entry.find("x"), entry.find("t")};
  outfeed.shape = Shape::scalar(DType::kToken);
  outfeed.sharding = "{devices=[4,1]<=[4]}";
  propagate_shardings(m);
  EXPECT_EQ(*entry.instr(entry.find("x")).sharding, "{devices=[4,1]<=[4]}");
  SpmdResult r = partition_spmd_with_stats(m, SpmdOptions{4});
  EXPECT_EQ(total_collectives(r.stats), 0);
  const Computation& out = r.module.entry();
  const Instruction& sent = out.instr(out.root());
  ASSERT_EQ(sent.opcode, Opcode::kOutfeed);
  EXPECT_EQ(out.instr(sent.operand(0)).shape.dims(), (std::vector<int64_t>{2, 4}));
}

// infeed (XLA's HandleInfeed): data tiled evenly over the 4 devices is
// infed per shard (f32[8,3] -> f32[2,3] each, no slice), the interpreter
// giving each device its tile of the seeded value; an uneven tiling (6 rows
// over 4) and a replicated one infeed the whole value. The second infeed
// takes the next seeded value on every device, as in the original.
TEST(SpmdCustomCalls, EvenlyTiledInfeedTakesOnlyItsShardAndVerifies) {
  auto p = partition_text(R"(HloModule m, num_partitions=4
ENTRY e {
  t = token[] after-all()
  a = (f32[8,3], token[]) infeed(t), sharding={{devices=[4,1]<=[4]}, {replicated}}
  x = f32[8,3] get-tuple-element(a), index=0, sharding={devices=[4,1]<=[4]}
  at = token[] get-tuple-element(a), index=1
  b = (f32[6,3], token[]) infeed(at), sharding={{devices=[4,1]<=[4]}, {replicated}}
  y = f32[6,3] get-tuple-element(b), index=0, sharding={devices=[4,1]<=[4]}
  bt = token[] get-tuple-element(b), index=1
  c = (f32[5], token[]) infeed(bt), sharding={{replicated}, {replicated}}
  z = f32[5] get-tuple-element(c), index=0
  nx = f32[8,3] negate(x), sharding={devices=[4,1]<=[4]}
  ny = f32[6,3] negate(y), sharding={devices=[4,1]<=[4]}
  ROOT r = (f32[8,3], f32[6,3], f32[5]) tuple(nx, ny, z)
}
)",
                          4);
  std::vector<Shape> fed;
  for (const Instruction& instr : p.result.module.entry().instructions())
    if (instr.opcode == Opcode::kInfeed) fed.push_back(instr.shape.tuple_shape(0));
  EXPECT_EQ(fed, (std::vector<Shape>{Shape(DType::kF32, {2, 3}), Shape(DType::kF32, {6, 3}),
                                     Shape(DType::kF32, {5})}));
  spmd_test::expect_equivalent(p);
}

TEST(SpmdCustomCalls, TopKWithNoFreeDimGathersOnlyTheCandidates) {
  // [1,32] tiled 4 ways on the sorted dim, no other dim to move the tiles
  // to: each device takes its top 3 of 8, the 4 x 3 candidates (values and
  // global indices) are all-gathered ([1,12], not the [1,32] row), sorted
  // with the TopK's comparator and cut to 3.
  auto p = partition_text(R"(HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT gt = pred[] compare(a, b), direction=GT
}
ENTRY e {
  x = f32[1,32] parameter(0), sharding={devices=[1,4]<=[4]}
  t = (f32[1,3], s32[1,3]) custom-call(x), custom_call_target="TopK", to_apply=cmp
  v = f32[1,3] get-tuple-element(t), index=0
  i = s32[1,3] get-tuple-element(t), index=1
  ROOT r = (f32[1,3], s32[1,3]) tuple(v, i), sharding={{replicated}, {replicated}}
}
)",
                          4);
  const Instruction* call = find_target(p.result.module, "TopK");
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(p.result.module.entry().instr(call->operand(0)).shape.dims(),
            (std::vector<int64_t>{1, 8}));
  int gathers = 0;
  for (const Instruction& instr : p.result.module.entry().instructions())
    if (instr.opcode == Opcode::kAllGather) {
      ++gathers;
      EXPECT_EQ(instr.shape.dims(), (std::vector<int64_t>{1, 12}));
    }
  EXPECT_EQ(gathers, 2);
}

// The fused attention forward on q, k, v [4,8,4,4] ([B, L, N, D]) with the
// given sharding of all three, o and lse [4,4,8] returned.
std::string flash_forward(const std::string& sharding) {
  return R"(HloModule m
ENTRY e {
  q = f32[4,8,4,4] parameter(0), sharding=)" +
         sharding + R"(
  k = f32[4,8,4,4] parameter(1), sharding=)" +
         sharding + R"(
  v = f32[4,8,4,4] parameter(2), sharding=)" +
         sharding + R"(
  f = (f32[4,8,4,4], f32[4,4,8]) custom-call(q, k, v), custom_call_target="podsim.flash_attention", backend_config={"causal":true,"block_q":4,"block_k":4}
  o = f32[4,8,4,4] get-tuple-element(f), index=0
  l = f32[4,4,8] get-tuple-element(f), index=1
  ROOT r = (f32[4,8,4,4], f32[4,4,8]) tuple(o, l)
}
)";
}

TEST(SpmdFlashAttention, BatchShardedRunsTheKernelOnTheShard) {
  // B split 4 ways: each device runs the kernel on [1,8,4,4], lse [1,4,8]; no collective.
  auto p = partition_text(flash_forward("{devices=[4,1,1,1]<=[4]}"), 4);
  EXPECT_EQ(total_collectives(p.result.stats), 0);
  const Instruction* call = find_target(p.result.module, "podsim.flash_attention");
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->shape.tuple_shape(0).dims(), (std::vector<int64_t>{1, 8, 4, 4}));
  EXPECT_EQ(call->shape.tuple_shape(1).dims(), (std::vector<int64_t>{1, 4, 8}));
  expect_equivalent(p);
}

TEST(SpmdFlashAttention, HeadShardedRunsTheKernelOnTheShard) {
  // N split 4 ways: [4,8,1,4] per device, lse [4,1,8]; no collective.
  auto p = partition_text(flash_forward("{devices=[1,1,4,1]<=[4]}"), 4);
  EXPECT_EQ(total_collectives(p.result.stats), 0);
  const Instruction* call = find_target(p.result.module, "podsim.flash_attention");
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->shape.tuple_shape(0).dims(), (std::vector<int64_t>{4, 8, 1, 4}));
  EXPECT_EQ(call->shape.tuple_shape(1).dims(), (std::vector<int64_t>{4, 1, 8}));
  expect_equivalent(p);
}

TEST(SpmdFlashAttention, SequenceShardedOperandsAreGatheredFirst) {
  // L split 4 ways cannot stay split (the kernel needs every key): q, k, v
  // are all-gathered along L and the call runs on the whole [4,8,4,4].
  auto p = partition_text(flash_forward("{devices=[1,4,1,1]<=[4]}"), 4);
  EXPECT_GE(p.result.stats.all_gathers, 3);
  const Instruction* call = find_target(p.result.module, "podsim.flash_attention");
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->shape.tuple_shape(0).dims(), (std::vector<int64_t>{4, 8, 4, 4}));
  expect_equivalent(p);
}

TEST(SpmdFlashAttention, BackwardBatchAndHeadShardedIsLocal) {
  // B and N split 2 x 2: every operand (lse on its dims 0, 1) is a
  // [2,8,2,4] / [2,2,8] shard, no collective.
  auto p = partition_text(R"(HloModule m
ENTRY e {
  q = f32[4,8,4,4] parameter(0), sharding={devices=[2,1,2,1]<=[4]}
  k = f32[4,8,4,4] parameter(1), sharding={devices=[2,1,2,1]<=[4]}
  v = f32[4,8,4,4] parameter(2), sharding={devices=[2,1,2,1]<=[4]}
  d = f32[4,8,4,4] parameter(3), sharding={devices=[2,1,2,1]<=[4]}
  f = (f32[4,8,4,4], f32[4,4,8]) custom-call(q, k, v), custom_call_target="podsim.flash_attention", backend_config={"causal":false,"block_q":8,"block_k":8}
  o = f32[4,8,4,4] get-tuple-element(f), index=0
  l = f32[4,4,8] get-tuple-element(f), index=1
  ROOT g = (f32[4,8,4,4], f32[4,8,4,4], f32[4,8,4,4]) custom-call(q, k, v, o, l, d), custom_call_target="podsim.flash_attention_bwd", backend_config={"causal":false,"block_q":8,"block_k":8}
}
)",
                          4);
  EXPECT_EQ(total_collectives(p.result.stats), 0);
  const Instruction* call = find_target(p.result.module, "podsim.flash_attention_bwd");
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->shape.tuple_shape(1).dims(), (std::vector<int64_t>{2, 8, 2, 4}));
  EXPECT_EQ(p.result.module.entry().instr(call->operand(4)).shape.dims(),
            (std::vector<int64_t>{2, 2, 8}));
  expect_equivalent(p);
}

TEST(SpmdManualRegions, FullToShardRegionComputesOnTheLocalShard) {
  // shard_map of exp over rows on 2 devices, plus the input outside: the same
  // function as exp(x) + x. Inside, the manual ops keep their [4,4] shape.
  expect_same_function(R"(HloModule m
ENTRY e {
  x = f32[8,4] parameter(0), sharding={devices=[2,1]<=[2]}
  s = f32[4,4] custom-call(x), custom_call_target="SPMDFullToShardShape", sharding={manual}
  m = f32[4,4] exponential(s), sharding={manual}
  f = f32[8,4] custom-call(m), custom_call_target="SPMDShardToFullShape", sharding={devices=[2,1]<=[2]}
  ROOT r = f32[8,4] add(f, x)
}
)",
                       R"(HloModule m
ENTRY e {
  x = f32[8,4] parameter(0), sharding={devices=[2,1]<=[2]}
  m = f32[8,4] exponential(x)
  ROOT r = f32[8,4] add(m, x), sharding={devices=[2,1]<=[2]}
}
)",
                       2);
  auto p = partition_text(R"(HloModule m
ENTRY e {
  x = f32[8,4] parameter(0), sharding={devices=[2,1]<=[2]}
  s = f32[4,4] custom-call(x), custom_call_target="SPMDFullToShardShape", sharding={manual}
  m = f32[4,4] exponential(s), sharding={manual}
  ROOT f = f32[8,4] custom-call(m), custom_call_target="SPMDShardToFullShape", sharding={devices=[2,1]<=[2]}
}
)",
                          2);
  EXPECT_EQ(total_collectives(p.result.stats), 0);
  EXPECT_EQ(p.result.stats.default_fallbacks, 0);
}

TEST(SpmdManualRegions, UnevenFullToShardPadsWithZeros) {
  // 7 rows over 2 devices: device 1's manual [4] holds rows 4..6 and a zero
  // (XLA pads the shard with zeros). Back to full f32[8] that is pad(x, 0).
  expect_same_function(R"(HloModule m
ENTRY e {
  x = f32[7] parameter(0), sharding={devices=[2]<=[2]}
  s = f32[4] custom-call(x), custom_call_target="SPMDFullToShardShape", sharding={manual}
  ROOT f = f32[8] custom-call(s), custom_call_target="SPMDShardToFullShape", sharding={devices=[2]<=[2]}
}
)",
                       R"(HloModule m
ENTRY e {
  x = f32[7] parameter(0), sharding={devices=[2]<=[2]}
  z = f32[] constant(0)
  ROOT f = f32[8] pad(x, z), padding=0_1, sharding={devices=[2]<=[2]}
}
)",
                       2);
}

TEST(SpmdManualRegions, ManualRegionIsNotPartitionedAgain) {
  // A reduce inside the region sums each device's own rows (no all-reduce):
  // row sums of 4x4 blocks, back to f32[8] over 2 devices = reduce over dim 1
  // of the whole [8,4].
  expect_same_function(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[8,4] parameter(0), sharding={devices=[2,1]<=[2]}
  s = f32[4,4] custom-call(x), custom_call_target="SPMDFullToShardShape", sharding={manual}
  z = f32[] constant(0), sharding={manual}
  r = f32[4] reduce(s, z), dimensions={1}, to_apply=add, sharding={manual}
  ROOT f = f32[8] custom-call(r), custom_call_target="SPMDShardToFullShape", sharding={devices=[2]<=[2]}
}
)",
                       R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[8,4] parameter(0), sharding={devices=[2,1]<=[2]}
  z = f32[] constant(0)
  ROOT r = f32[8] reduce(x, z), dimensions={1}, to_apply=add, sharding={devices=[2]<=[2]}
}
)",
                       2);
}

// An all-reduce with `groups` inside a partially manual region: tile array
// 0,2,1,3 over [2 data tiles, 2 manual].
std::string manual_all_reduce(const std::string& groups) {
  return R"(HloModule m
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[2,2] parameter(0), sharding={devices=[2,1,2]0,2,1,3 last_tile_dims={manual}}
  ROOT r = f32[2,2] all-reduce(x), to_apply=sum, replica_groups=)" +
         groups + R"(, use_global_device_ids=true,
    channel_id=1, sharding={devices=[2,1,2]0,2,1,3 last_tile_dims={manual}}
}
)";
}

TEST(SpmdManualRegions, AllReduceAcrossManualSubgroupsStaysOnTheShard) {
  // Tile array 0,2,1,3 over [2 data tiles, 2 manual]: device 0 = (tile 0,
  // manual 0), 2 = (0, 1), 1 = (1, 0), 3 = (1, 1). Groups {2,0},{1,3} join
  // the two manual copies of one data tile, so the all-reduce runs on the
  // [1,2] shard with its groups unchanged (before: all-gather to [2,2],
  // all-reduce, slice).
  auto p = partition_text(manual_all_reduce("{{2,0},{1,3}}"), 4);
  EXPECT_EQ(p.result.stats.all_gathers, 0);
  EXPECT_EQ(p.result.stats.default_fallbacks, 0);
  const Computation& entry = p.result.module.entry();
  const Instruction& root = entry.instr(entry.root());
  ASSERT_EQ(root.opcode, Opcode::kAllReduce);
  EXPECT_EQ(root.shape.dims(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(root.attrs.replica_groups.expand(4),
            (std::vector<std::vector<int64_t>>{{2, 0}, {1, 3}}));
}

TEST(SpmdManualRegions, AllReduceGroupAcrossDataTilesIsAUserError) {
  // The same layout; {1,0} joins device 1 (data tile 1) and device 0 (data
  // tile 0): a collective in a partially manual region reduces over the
  // manual dims only, so such a group has no meaning and is refused (as
  // XLA's partitioner does), naming the group and the two devices.
  try {
    partition_text(manual_all_reduce("{{1,0},{2,3}}"), 4);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("replica group {1,0} joins devices 1 and 0 of different data tiles"),
              std::string::npos)
        << e.message();
  }
}

TEST(SpmdManualRegions, AutoValueEnteringAManualOpIsAUserError) {
  auto run = [] {
    partition_text(R"(HloModule m
ENTRY e {
  x = f32[8,4] parameter(0), sharding={devices=[2,1]<=[2]}
  ROOT m = f32[8,4] exponential(x), sharding={manual}
}
)",
                   2);
  };
  EXPECT_THROW(run(), UserError);
}

}  // namespace
}  // namespace podsim::compiler
