// Dot/einsum strategies (docs/reference/gspmd.md#dot-strategies, #partitioner-checklist items 20,
// 22): each test partitions a dot, checks numeric equivalence with the unpartitioned module on
// seeded inputs (padding filled with a sentinel so leaking padding shows), and checks the
// collectives the chosen strategy implies, derived in the test's comment. Meshes: 1-D, 2-D, 3-D
// ([2,2,2]), even and uneven dims, partial replication.
#include <gtest/gtest.h>

#include "compiler/spmd/dot_strategies.h"
#include "tests/compiler/spmd/dot_test_util.h"

namespace podsim::compiler {
namespace {

using spmd_dot_test::count_ops;
using spmd_dot_test::dot_module;
using spmd_dot_test::expect_equivalent;
using spmd_dot_test::partition;

TEST(SpmdDot, TiledDot) {
  // C[8,4] = A[8,6] B[6,4], K tiled 2 on both, C replicated: local partial
  // dot + one all-reduce over both devices; nothing gathered.
  auto p = partition(
      dot_module(
          "  a = f32[8,6] parameter(0), sharding={devices=[1,2]<=[2]}\n"
          "  b = f32[6,4] parameter(1), sharding={devices=[2,1]<=[2]}\n"
          "  ROOT d = f32[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
          "sharding={replicated}\n"),
      2);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_reduces, 1);
  EXPECT_EQ(p.result.stats.all_gathers + p.result.stats.reduce_scatters, 0);
}

TEST(SpmdDot, TiledDotOutputTiled) {
  // Same, C tiled [1,2]: device k of the K group keeps column block k of the
  // sum, so all-reduce + slice becomes one reduce-scatter (half the bytes:
  // (p-1)/p |C| instead of 2(p-1)/p |C|).
  auto p = partition(
      dot_module(
          "  a = f32[8,6] parameter(0), sharding={devices=[1,2]<=[2]}\n"
          "  b = f32[6,4] parameter(1), sharding={devices=[2,1]<=[2]}\n"
          "  ROOT d = f32[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
          "sharding={devices=[1,2]<=[2]}\n"),
      2);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.reduce_scatters, 1);
  EXPECT_EQ(p.result.stats.all_reduces + p.result.stats.all_gathers, 0);
}

TEST(SpmdDot, TiledDotOutputTiledUnevenOn4) {
  // K = 7 and N = 5 over 4 devices: K padding is zeroed before the dot, N is
  // padded to 8 for the reduce-scatter.
  auto p = partition(
      dot_module(
          "  a = f32[3,7] parameter(0), sharding={devices=[1,4]<=[4]}\n"
          "  b = f32[7,5] parameter(1), sharding={devices=[4,1]<=[4]}\n"
          "  ROOT d = f32[3,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
          "sharding={devices=[1,4]<=[4]}\n"),
      4);
  expect_equivalent(p, 5);
  EXPECT_EQ(p.result.stats.reduce_scatters, 1);
  EXPECT_EQ(p.result.stats.all_reduces + p.result.stats.all_gathers, 0);
}

TEST(SpmdDot, EinsumBatchPartitioned) {
  // b tiled 4 ways on lhs, rhs and out: batch-parallel, no collective.
  auto p = partition(
      dot_module(
          "  a = f32[4,3,5] parameter(0), sharding={devices=[4,1,1]<=[4]}\n"
          "  b = f32[4,5,2] parameter(1), sharding={devices=[4,1,1]<=[4]}\n"
          "  ROOT d = f32[4,3,2] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, "
          "lhs_contracting_dims={2}, rhs_contracting_dims={1}, sharding={devices=[4,1,1]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(count_ops(p.result.module, {Opcode::kAllReduce, Opcode::kAllGather, Opcode::kAllToAll,
                                        Opcode::kCollectivePermute, Opcode::kReduceScatter}),
            0);
}

TEST(SpmdDot, EinsumLHSandOutputBatchPartitioned) {
  // lhs and out tiled on b (uneven: 5 over 2), rhs replicated: the rhs is
  // sliced locally to its batch tile (free), no collective.
  auto p = partition(
      dot_module(
          "  a = f32[5,3,4] parameter(0), sharding={devices=[2,1,1]<=[2]}\n"
          "  b = f32[5,4,2] parameter(1), sharding={replicated}\n"
          "  ROOT d = f32[5,3,2] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, "
          "lhs_contracting_dims={2}, rhs_contracting_dims={1}, sharding={devices=[2,1,1]<=[2]}\n"),
      2);
  expect_equivalent(p);
  EXPECT_EQ(
      p.result.stats.all_reduces + p.result.stats.all_gathers + p.result.stats.collective_permutes,
      0);
}

TEST(SpmdDot, EinsumOutputBatchPartitionedOperandsReplicated) {
  // Everything replicated except the out (b tiled 4): both operands are
  // sliced locally, each device computes its batch tile: no collective and
  // a quarter of the flops.
  auto p = partition(
      dot_module(
          "  a = f32[8,3,4] parameter(0), sharding={replicated}\n"
          "  b = f32[8,4,2] parameter(1), sharding={replicated}\n"
          "  ROOT d = f32[8,3,2] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, "
          "lhs_contracting_dims={2}, rhs_contracting_dims={1}, sharding={devices=[4,1,1]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_reduces + p.result.stats.all_gathers, 0);
}

TEST(SpmdDot, EinsumContractingDimsPartitioned) {
  // Two contracting dims tiled 2 x 2 on both operands (4 devices), out
  // replicated: one partial dot, one all-reduce over the 4-device group (XLA
  // emits one per dim; one over the product group moves the same sum).
  auto p = partition(
      dot_module(
          "  a = f32[3,4,6] parameter(0), sharding={devices=[1,2,2]<=[4]}\n"
          "  b = f32[4,6,5] parameter(1), sharding={devices=[2,2,1]<=[4]}\n"
          "  ROOT d = f32[3,5] dot(a, b), lhs_contracting_dims={1,2}, rhs_contracting_dims={0,1}, "
          "sharding={replicated}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_reduces, 1);
  EXPECT_EQ(p.result.stats.all_gathers, 0);
}

TEST(SpmdDot, EinsumLHSNonContractingDimsPartitioned) {
  // lhs tiled on both free dims [2,2,1], rhs replicated, out tiled like lhs:
  // each device multiplies its lhs tile by the whole rhs: no collective.
  auto p = partition(
      dot_module(
          "  a = f32[4,6,5] parameter(0), sharding={devices=[2,2,1]<=[4]}\n"
          "  b = f32[5,3] parameter(1), sharding={replicated}\n"
          "  ROOT d = f32[4,6,3] dot(a, b), lhs_contracting_dims={2}, rhs_contracting_dims={0}, "
          "sharding={devices=[2,2,1]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_reduces + p.result.stats.all_gathers + p.result.stats.all_to_alls,
            0);
}

TEST(SpmdDot, EinsumRHSNonContractingDimsPartitioned) {
  // rhs tiled on N (7 over 4, uneven), lhs replicated, out tiled on N: local.
  auto p = partition(
      dot_module(
          "  a = f32[3,5] parameter(0), sharding={replicated}\n"
          "  b = f32[5,7] parameter(1), sharding={devices=[1,4]<=[4]}\n"
          "  ROOT d = f32[3,7] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
          "sharding={devices=[1,4]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_reduces + p.result.stats.all_gathers + p.result.stats.all_to_alls,
            0);
}

TEST(SpmdDot, LhsNonContractingAllGathersSmallerRhs) {
  // lhs [M/4] (M=16, K=6), rhs [N/4] (N=4), out [M/4]. Options per device
  // (f32): all-gather rhs = 3/4 * 6*4*4 B = 72 B; keep rhs's N tiling instead
  // (all-to-all of lhs then gather the out) costs more. Below the windowed
  // threshold (default 256 MiB): exactly one all-gather, no loop.
  auto p = partition(
      dot_module(
          "  a = f32[16,6] parameter(0), sharding={devices=[4,1]<=[4]}\n"
          "  b = f32[6,4] parameter(1), sharding={devices=[1,4]<=[4]}\n"
          "  ROOT d = f32[16,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
          "sharding={devices=[4,1]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_gathers, 1);
  EXPECT_EQ(p.result.stats.all_reduces + p.result.stats.all_to_alls, 0);
  EXPECT_EQ(count_ops(p.result.module, {Opcode::kWhile}), 0);
}

TEST(SpmdDot, PlanCostOfAllGatherMatchesFormula) {
  // The plan above through the strategy API: rhs replicated, lhs unchanged,
  // bytes = (p-1)/p * |rhs| = 3/4 * 96 = 72.
  EinsumSpec spec;
  spec.lhs = Shape(DType::kF32, {16, 6});
  spec.rhs = Shape(DType::kF32, {6, 4});
  spec.out = Shape(DType::kF32, {16, 4});
  spec.labels = {{LabelKind::kContracting, 1, 0, -1, 6},
                 {LabelKind::kLhsFree, 0, -1, 0, 16},
                 {LabelKind::kRhsFree, -1, 1, 1, 4}};
  const Sharding rows = parse_sharding("{devices=[4,1]<=[4]}");
  const Sharding cols = parse_sharding("{devices=[1,4]<=[4]}");
  DotPlan plan = choose_dot_plan(spec, DotShardings{rows, cols, rows}, 4);
  EXPECT_EQ(plan.lhs, rows) << plan.describe();
  EXPECT_TRUE(plan.rhs.is_replicated()) << plan.describe();
  EXPECT_EQ(plan.cost.full_replications, 0);
  EXPECT_DOUBLE_EQ(plan.cost.bytes, 72.0);
  EXPECT_TRUE(plan.partial_tile_dims.empty());
}

TEST(SpmdDot, PlanPrefersReduceScatterOverAllReduce) {
  // Contracting-tiled operands, out tiled on N: the reduce-scatter plan
  // costs (p-1)/p * |C_local| = 1/2 * 8*4*4 B = 64 B, no operand moves.
  EinsumSpec spec;
  spec.lhs = Shape(DType::kF32, {8, 6});
  spec.rhs = Shape(DType::kF32, {6, 4});
  spec.out = Shape(DType::kF32, {8, 4});
  spec.labels = {{LabelKind::kContracting, 1, 0, -1, 6},
                 {LabelKind::kLhsFree, 0, -1, 0, 8},
                 {LabelKind::kRhsFree, -1, 1, 1, 4}};
  DotPlan plan = choose_dot_plan(
      spec,
      DotShardings{parse_sharding("{devices=[1,2]<=[2]}"), parse_sharding("{devices=[2,1]<=[2]}"),
                   parse_sharding("{devices=[1,2]<=[2]}")},
      2);
  EXPECT_EQ(plan.partial_tile_dims.size(), 1u) << plan.describe();
  EXPECT_DOUBLE_EQ(plan.cost.bytes, 64.0);
}

// Megatron-style projection in miniature (2 devices): x[64,20] tiled on its
// contracting dim E, w[20,16] and the out [64,16] tiled on H. Bytes (f32):
//  gather x:  (p-1)/p |x| = 1/2 * 64*20*4 = 2560;
//  contract:  w to E-tiled, all-to-all 1/2 * (20*8*4) = 320, plus the
//             reduce-scatter of the local [64,16] partial 1/2 * 64*16*4 = 2048,
//             total 2368.
EinsumSpec megatron_projection_spec() {
  EinsumSpec spec;
  spec.lhs = Shape(DType::kF32, {64, 20});
  spec.rhs = Shape(DType::kF32, {20, 16});
  spec.out = Shape(DType::kF32, {64, 16});
  spec.labels = {{LabelKind::kContracting, 1, 0, -1, 20},
                 {LabelKind::kLhsFree, 0, -1, 0, 64},
                 {LabelKind::kRhsFree, -1, 1, 1, 16}};
  return spec;
}

TEST(SpmdDot, PlanSpreadsAnOperandGatherOverItsDotReaders) {
  const EinsumSpec spec = megatron_projection_spec();
  const Sharding cols = parse_sharding("{devices=[1,2]<=[2]}");
  const DotShardings current{cols, cols, cols};
  // Alone, the contracting plan is cheaper (2368 < 2560).
  DotPlan alone = choose_dot_plan(spec, current, 2);
  EXPECT_EQ(alone.partial_tile_dims.size(), 1u) << alone.describe();
  EXPECT_DOUBLE_EQ(alone.cost.bytes, 2368.0);
  // x read by 4 dots (q, k, v and the FFN input of a parallel block): the
  // gather counts 2560 / 4 = 640 and wins.
  OperandReuse shared;
  shared.sharers[0] = 4;
  DotPlan spread = choose_dot_plan(spec, current, 2, nullptr, shared);
  EXPECT_TRUE(spread.partial_tile_dims.empty()) << spread.describe();
  EXPECT_TRUE(spread.lhs.is_replicated()) << spread.describe();
  EXPECT_DOUBLE_EQ(spread.cost.bytes, 640.0);
  // Once another dot built the gathered x, it costs nothing.
  OperandReuse built;
  built.built[0].push_back(Sharding::replicated());
  DotPlan reused = choose_dot_plan(spec, current, 2, nullptr, built);
  EXPECT_TRUE(reused.lhs.is_replicated()) << reused.describe();
  EXPECT_DOUBLE_EQ(reused.cost.bytes, 0.0);
}

TEST(SpmdDot, TwoDotsReadingOneOperandShareOneAllGather) {
  // The spec above twice on one x (2 dots reading it): each gather counts
  // 2560 / 2 = 1280 < 2368, the first dot builds the gathered x and the second
  // reuses it: one all-gather, no reduce-scatter and no weight all-to-all
  // (the contracting plan would take 2 reduce-scatters and 2 all-to-alls).
  auto p =
      partition(dot_module("  x = f32[64,20] parameter(0), sharding={devices=[1,2]<=[2]}\n"
                           "  w1 = f32[20,16] parameter(1), sharding={devices=[1,2]<=[2]}\n"
                           "  w2 = f32[20,16] parameter(2), sharding={devices=[1,2]<=[2]}\n"
                           "  d1 = f32[64,16] dot(x, w1), lhs_contracting_dims={1}, "
                           "rhs_contracting_dims={0}, sharding={devices=[1,2]<=[2]}\n"
                           "  d2 = f32[64,16] dot(x, w2), lhs_contracting_dims={1}, "
                           "rhs_contracting_dims={0}, sharding={devices=[1,2]<=[2]}\n"
                           "  ROOT s = f32[64,16] add(d1, d2), sharding={devices=[1,2]<=[2]}\n"),
                2);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_gathers, 1);
  EXPECT_EQ(
      p.result.stats.reduce_scatters + p.result.stats.all_to_alls + p.result.stats.all_reduces, 0);
}

TEST(SpmdDot, Dot2DPartitionedNonContractingAndContracting0) {
  // [2,2] mesh: lhs [M/x, K/y], rhs [K/y] replicated over x, out [M/x]
  // replicated over y. Grouping on M (x) leaves a 1-D contracting problem in
  // each y group: one all-reduce within groups of 2, nothing gathered.
  auto p = partition(
      dot_module(
          "  a = f32[6,8] parameter(0), sharding={devices=[2,2]<=[4]}\n"
          "  b = f32[8,5] parameter(1), sharding={devices=[2,1,2]<=[2,2]T(1,0) "
          "last_tile_dim_replicate}\n"
          "  ROOT d = f32[6,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
          "sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_reduces, 1);
  EXPECT_EQ(
      p.result.stats.all_gathers + p.result.stats.full_replications + p.result.stats.all_to_alls,
      0);
}

TEST(SpmdDot, Dot2DPartitionedNonContractingAndContractingReduceScatter) {
  // As above but out [M/x, N/y]: the y-group sum lands scattered over N:
  // one reduce-scatter within groups of 2.
  auto p = partition(
      dot_module(
          "  a = f32[6,8] parameter(0), sharding={devices=[2,2]<=[4]}\n"
          "  b = f32[8,5] parameter(1), sharding={devices=[2,1,2]<=[2,2]T(1,0) "
          "last_tile_dim_replicate}\n"
          "  ROOT d = f32[6,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
          "sharding={devices=[2,2]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.reduce_scatters, 1);
  EXPECT_EQ(
      p.result.stats.all_reduces + p.result.stats.all_gathers + p.result.stats.full_replications,
      0);
}

TEST(SpmdDot, Dot2DPartitionedBatchAndNonContracting) {
  // [2,4] mesh: lhs [b/x, M/y], rhs [b/x] replicated over y, out [b/x, M/y]:
  // group on batch, inner lhs-non-contracting: no collective.
  auto p = partition(
      dot_module(
          "  a = f32[4,8,3] parameter(0), sharding={devices=[2,4,1]<=[8]}\n"
          "  b = f32[4,3,5] parameter(1), sharding={devices=[2,1,1,4]<=[8] "
          "last_tile_dim_replicate}\n"
          "  ROOT d = f32[4,8,5] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, "
          "lhs_contracting_dims={2}, rhs_contracting_dims={1}, sharding={devices=[2,4,1]<=[8]}\n"),
      8);
  expect_equivalent(p);
  EXPECT_EQ(count_ops(p.result.module, {Opcode::kAllReduce, Opcode::kAllGather, Opcode::kAllToAll,
                                        Opcode::kCollectivePermute, Opcode::kReduceScatter}),
            0);
}

TEST(SpmdDot, Dot2DPartitionedBatchAndContracting) {
  // [2,4] mesh: lhs [b/x, K/y], rhs [b/x, K/y], out [b/x] replicated over y:
  // group on batch, inner contracting: one all-reduce within groups of 4.
  auto p = partition(
      dot_module("  a = f32[4,3,9] parameter(0), sharding={devices=[2,1,4]<=[8]}\n"
                 "  b = f32[4,9,5] parameter(1), sharding={devices=[2,4,1]<=[8]}\n"
                 "  ROOT d = f32[4,3,5] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, "
                 "lhs_contracting_dims={2}, rhs_contracting_dims={1}, "
                 "sharding={devices=[2,1,1,4]<=[8] last_tile_dim_replicate}\n"),
      8);
  expect_equivalent(p, 3);
  EXPECT_EQ(p.result.stats.all_reduces, 1);
  EXPECT_EQ(p.result.stats.all_gathers + p.result.stats.full_replications, 0);
  // The all-reduce runs within groups of 4 (the K tiles), not over all 8.
  for (const Instruction& instr : p.result.module.entry().instructions())
    if (instr.opcode == Opcode::kAllReduce) {
      EXPECT_EQ(instr.attrs.replica_groups.group_size(8), 4);
    }
}

TEST(SpmdDot, Dot3DMeshBatchNonContractingContracting) {
  // [2,2,2] mesh: lhs [b/x, M/y, K/z], rhs [b/x, K/z] replicated over y, out
  // [b/x, M/y] replicated over z: group on b and M, contracting inside the
  // z pairs: one all-reduce in groups of 2, nothing gathered.
  auto p = partition(
      dot_module("  a = f32[2,6,4] parameter(0), sharding={devices=[2,2,2]<=[8]}\n"
                 "  b = f32[2,4,3] parameter(1), sharding={devices=[2,2,1,2]<=[2,2,2]T(0,2,1) "
                 "last_tile_dim_replicate}\n"
                 "  ROOT d = f32[2,6,3] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, "
                 "lhs_contracting_dims={2}, rhs_contracting_dims={1}, "
                 "sharding={devices=[2,2,1,2]<=[8] last_tile_dim_replicate}\n"),
      8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_reduces, 1);
  EXPECT_EQ(
      p.result.stats.all_gathers + p.result.stats.full_replications + p.result.stats.all_to_alls,
      0);
  for (const Instruction& instr : p.result.module.entry().instructions())
    if (instr.opcode == Opcode::kAllReduce) {
      EXPECT_EQ(instr.attrs.replica_groups.group_size(8), 2);
    }
}

TEST(SpmdDot, DotPartialContracting) {
  // 4 devices: K tiled 2 and replicated 2 on both operands, out replicated:
  // partial sums combined within the K pairs only (groups of 2).
  auto p = partition(
      dot_module(
          "  a = f32[4,6] parameter(0), sharding={devices=[1,2,2]<=[4] last_tile_dim_replicate}\n"
          "  b = f32[6,3] parameter(1), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}\n"
          "  ROOT d = f32[4,3] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
          "sharding={replicated}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_reduces, 1);
  EXPECT_EQ(p.result.stats.all_gathers, 0);
  for (const Instruction& instr : p.result.module.entry().instructions())
    if (instr.opcode == Opcode::kAllReduce) {
      EXPECT_EQ(instr.attrs.replica_groups.group_size(4), 2);
    }
}

TEST(SpmdDot, DotPartialNonContracting) {
  // lhs [M/2] replicated 2, rhs [N/2] replicated over the other axis, out
  // [M/2, N/2]: the two partial shardings merge into the out's tiling, each
  // device multiplies the tiles it already has: no collective.
  auto p = partition(
      dot_module(
          "  a = f32[6,5] parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}\n"
          "  b = f32[5,7] parameter(1), sharding={devices=[1,2,2]<=[2,2]T(1,0) "
          "last_tile_dim_replicate}\n"
          "  ROOT d = f32[6,7] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
          "sharding={devices=[2,2]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(count_ops(p.result.module, {Opcode::kAllReduce, Opcode::kAllGather, Opcode::kAllToAll,
                                        Opcode::kCollectivePermute, Opcode::kReduceScatter}),
            0);
}

TEST(SpmdDot, DotPartialDeviceOrder) {
  // Both operands K-tiled 2 ways but over opposite device orders in their
  // replication groups: lhs K tile = d % 2 (device 2r + k), rhs K tile =
  // d / 2 (device 2k + r). Per device (f32, K = 16): moving the rhs shard
  // (8x3, one permute) = 96 B plus the all-reduce of the 6x3 out
  // 2 * 1/2 * 72 = 72 B beats gathering both operands (192 + 96 B). So:
  // one collective-permute, one all-reduce, nothing gathered.
  auto p = partition(
      dot_module(
          "  a = f32[6,16] parameter(0), sharding={devices=[1,2,2]<=[2,2]T(1,0) "
          "last_tile_dim_replicate}\n"
          "  b = f32[16,3] parameter(1), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}\n"
          "  ROOT d = f32[6,3] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
          "sharding={replicated}\n"),
      4);
  EXPECT_EQ(p.result.stats.collective_permutes, 1);
  EXPECT_EQ(p.result.stats.all_gathers, 0);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_reduces, 1);
  EXPECT_EQ(p.result.stats.full_replications, 0);
}

TEST(SpmdDot, EinsumOutputLHSNonContractingDimPartitioned) {
  // Operands replicated, out tiled on the lhs free dim M (uneven 7 over 4):
  // the lhs is sliced locally, the rhs used whole: no collective.
  auto p = partition(
      dot_module(
          "  a = f32[7,5] parameter(0), sharding={replicated}\n"
          "  b = f32[5,3] parameter(1), sharding={replicated}\n"
          "  ROOT d = f32[7,3] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
          "sharding={devices=[4,1]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(
      p.result.stats.all_reduces + p.result.stats.all_gathers + p.result.stats.collective_permutes,
      0);
}

}  // namespace
}  // namespace podsim::compiler
