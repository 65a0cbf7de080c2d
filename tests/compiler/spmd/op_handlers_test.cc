// Per-op partitioning behaviours (docs/reference/gspmd.md#partitioner-checklist), checked
// numerically against the unpartitioned program on 1-D (2, 4, 8 devices)
// and 2-D ([2,2], [2,4]) meshes. Collective counts follow from the handler
// strategy (gspmd.md#per-op-partitioning, #dot-strategies) and are derived in each test's comment.
#include <gtest/gtest.h>

#include "tests/compiler/spmd/spmd_test_util.h"

namespace podsim::compiler {
namespace {

using spmd_test::expect_equivalent;
using spmd_test::partition_text;

constexpr const char* kAdd = R"(
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
)";

std::string module(const std::string& body) {
  return std::string("HloModule m\n") + kAdd + "ENTRY e {\n" + body + "}\n";
}

TEST(SpmdOps, ElementwiseWithMismatchedOperandShardings) {
  // y arrives tiled on dim 1 but the add is tiled on dim 0: y's tiling moves
  // dims with one all-to-all (same device order), x passes unchanged.
  for (int n : {2, 4, 8}) {
    const std::string ns = std::to_string(n);
    auto p = partition_text(
        module("  x = f32[8,8] parameter(0), sharding={devices=[" + ns + ",1]<=[" + ns +
               "]}\n"
               "  y = f32[8,8] parameter(1), sharding={devices=[1," +
               ns + "]<=[" + ns +
               "]}\n"
               "  ROOT s = f32[8,8] add(x, y), sharding={devices=[" +
               ns + ",1]<=[" + ns + "]}\n"),
        n);
    expect_equivalent(p);
    EXPECT_EQ(p.result.stats.all_to_alls, 1);
    EXPECT_EQ(p.result.stats.full_replications, 0);
  }
}

TEST(SpmdOps, SelectCompareConvertOnUnevenTiles) {
  auto p = partition_text(module("  x = f32[5,3] parameter(0), sharding={devices=[2,2]<=[4]}\n"
                                 "  y = f32[5,3] parameter(1), sharding={devices=[2,2]<=[4]}\n"
                                 "  c = pred[5,3] compare(x, y), direction=LT\n"
                                 "  m = f32[5,3] select(c, x, y)\n"
                                 "  ROOT r = s32[5,3] convert(m)\n"),
                          4);
  expect_equivalent(p, 7);
  EXPECT_EQ(p.result.stats.all_gathers + p.result.stats.full_replications, 0);
}

TEST(SpmdOps, Broadcast) {
  // Operand tiled 2 ways on its only dim, result [2,4] tiled: the operand
  // keeps dim 0's tiling, the new dim 1 is sliced locally -> no collective.
  auto p = partition_text(
      module("  x = f32[6] parameter(0), sharding={devices=[2,4]<=[8] last_tile_dim_replicate}\n"
             "  ROOT b = f32[6,8] broadcast(x), dimensions={0}, sharding={devices=[2,4]<=[8]}\n"),
      8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_gathers + p.result.stats.collective_permutes, 0);
}

TEST(SpmdOps, BroadcastOfAReplicatedOperandIsBuiltAtTheShardShape) {
  // x replicated, result [8,6] tiled [1,4] on the new dim (uneven: 6 over 4,
  // shard 2): every device broadcasts straight into its [8,2] shard. The
  // largest value built is the shard (16 elements), never the full [8,6]
  // (48); no collective.
  auto p = partition_text(
      module("  x = f32[8] parameter(0), sharding={replicated}\n"
             "  ROOT b = f32[8,6] broadcast(x), dimensions={0}, sharding={devices=[1,4]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(spmd_test::total_collectives(p.result.stats), 0);
  for (const Instruction& instr : p.result.module.entry().instructions()) {
    if (instr.shape.is_array()) {
      EXPECT_LE(instr.shape.num_elements(), 16) << instr.name;
    }
  }
}

TEST(SpmdOps, CrossReplicaAllReduceIsLeftLocal) {
  // replica_groups={} without channel_id or use_global_device_ids reduces
  // across replicas, not partitions: the [2,4] shard goes into the same
  // all-reduce unchanged (no all-gather, no second collective). The
  // interpreter cannot check it numerically (it reads {} as all partitions).
  auto p =
      partition_text(module("  x = f32[8,4] parameter(0), sharding={devices=[4,1]<=[4]}\n"
                            "  ROOT r = f32[8,4] all-reduce(x), replica_groups={}, to_apply=add\n"),
                     4);
  EXPECT_EQ(p.result.stats.all_gathers, 0);
  EXPECT_EQ(p.result.stats.default_fallbacks, 0);
  int all_reduces = 0;
  for (const Instruction& instr : p.result.module.entry().instructions())
    if (instr.opcode == Opcode::kAllReduce) {
      ++all_reduces;
      EXPECT_EQ(instr.shape.dims(), (std::vector<int64_t>{2, 4}));
      EXPECT_TRUE(instr.attrs.replica_groups.is_all_devices());
    }
  EXPECT_EQ(all_reduces, 1);
}

TEST(SpmdOps, ElementwiseResultKeepsItsOwnElementType) {
  // is-finite of a tiled f32 value is a pred shard (built as a negate, then
  // turned into is-finite: the reader may not type it yet); no collective.
  Module m =
      parse_hlo(module("  x = f32[8,4] parameter(0), sharding={devices=[4,1]<=[4]}\n"
                       "  ROOT f = f32[8,4] negate(x)\n"));
  m.set_num_partitions(4);
  Computation& entry = m.mutable_computation(m.entry_id());
  Instruction& root = entry.mutable_instr(entry.root());
  root.opcode = Opcode::kIsFinite;
  root.shape = Shape(DType::kPred, {8, 4});
  propagate_shardings(m);
  SpmdResult r = partition_spmd_with_stats(m, SpmdOptions{4});
  EXPECT_EQ(spmd_test::total_collectives(r.stats), 0);
  const Instruction& out = r.module.entry().instr(r.module.entry().root());
  EXPECT_EQ(out.opcode, Opcode::kIsFinite);
  EXPECT_EQ(out.shape, Shape(DType::kPred, {2, 4}));
}

TEST(SpmdOps, SameWidthBitcastConvertIsElementwise) {
  // f32 -> s32 keeps the dims: the result takes x's tiling (propagation) and
  // the op runs on the [2,4] shard (built as a convert, then retagged).
  Module m =
      parse_hlo(module("  x = f32[8,4] parameter(0), sharding={devices=[4,1]<=[4]}\n"
                       "  ROOT b = s32[8,4] convert(x)\n"));
  m.set_num_partitions(4);
  Computation& entry = m.mutable_computation(m.entry_id());
  entry.mutable_instr(entry.root()).opcode = Opcode::kBitcastConvert;
  propagate_shardings(m);
  EXPECT_EQ(*entry.instr(entry.root()).sharding, "{devices=[4,1]<=[4]}");
  SpmdResult r = partition_spmd_with_stats(m, SpmdOptions{4});
  EXPECT_EQ(spmd_test::total_collectives(r.stats), 0);
  EXPECT_EQ(r.stats.default_fallbacks, 0);
  EXPECT_EQ(r.module.entry().instr(r.module.entry().root()).shape, Shape(DType::kS32, {2, 4}));
}

TEST(SpmdOps, Transpose) {
  auto p = partition_text(module("  x = f32[4,6] parameter(0), sharding={devices=[2,4]<=[8]}\n"
                                 "  ROOT t = f32[6,4] transpose(x), dimensions={1,0}, "
                                 "sharding={devices=[4,2]<=[2,4]T(1,0)}\n"),
                          8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_gathers + p.result.stats.full_replications +
                p.result.stats.collective_permutes,
            0);
}

TEST(SpmdOps, ReduceOverShardedDimEven) {
  // Sum over dim 1 tiled 4 ways: local reduce + one all-reduce.
  auto p = partition_text(module("  x = f32[4,8] parameter(0), sharding={devices=[2,4]<=[8]}\n"
                                 "  z = f32[] constant(0)\n"
                                 "  ROOT r = f32[4] reduce(x, z), dimensions={1}, to_apply=add, "
                                 "sharding={devices=[2,4]<=[8] last_tile_dim_replicate}\n"),
                          8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_reduces, 1);
}

TEST(SpmdOps, ReduceOverShardedDimUneven) {
  // 7 columns over 4 devices: shards of ceil(7/4) = 2, the last device holds
  // 1 column + 1 padding column, which the harness fills with 37. Inputs lie
  // in [-1, 1], so an unmasked max would return 37 for every row; masked with
  // the init value (-1000) the padding never wins.
  auto p = partition_text(
      std::string("HloModule m\nmax {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                  "  ROOT s = f32[] maximum(a, b)\n}\nENTRY e {\n"
                  "  x = f32[3,7] parameter(0), sharding={devices=[1,4]<=[4]}\n"
                  "  lo = f32[] constant(-1000)\n"
                  "  ROOT r = f32[3] reduce(x, lo), dimensions={1}, to_apply=max, "
                  "sharding={replicated}\n}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_reduces, 1);
}

TEST(SpmdOps, DotBatchPartitioned) {
  // Batch dim tiled on both operands and result: purely local.
  auto p = partition_text(
      module(
          "  a = f32[4,3,5] parameter(0), sharding={devices=[4,1,1]<=[4]}\n"
          "  b = f32[4,5,2] parameter(1), sharding={devices=[4,1,1]<=[4]}\n"
          "  ROOT d = f32[4,3,2] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, "
          "lhs_contracting_dims={2}, rhs_contracting_dims={1}, sharding={devices=[4,1,1]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_reduces + p.result.stats.all_gathers, 0);
}

TEST(SpmdOps, DotContractingPartitioned) {
  // K tiled on both sides: partial sums + one all-reduce. K = 7 is uneven for
  // every n, so padding (37 from the harness) must be zeroed before the dot.
  for (int n : {2, 4, 8}) {
    const std::string ns = std::to_string(n);
    auto p = partition_text(
        module("  a = f32[3,7] parameter(0), sharding={devices=[1," + ns + "]<=[" + ns +
               "]}\n"
               "  b = f32[7,2] parameter(1), sharding={devices=[" +
               ns + ",1]<=[" + ns +
               "]}\n"
               "  ROOT d = f32[3,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
               "sharding={replicated}\n"),
        n);
    expect_equivalent(p, 3);
    EXPECT_EQ(p.result.stats.all_reduces, 1);
    EXPECT_EQ(p.result.stats.all_gathers, 0);
  }
}

TEST(SpmdOps, DotLhsNonContracting) {
  // M tiled on lhs and result, rhs replicated: local.
  auto p = partition_text(
      module(
          "  a = f32[8,5] parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}\n"
          "  b = f32[5,4] parameter(1), sharding={replicated}\n"
          "  ROOT d = f32[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
          "sharding={devices=[2,2]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_reduces + p.result.stats.all_gathers, 0);
}

TEST(SpmdOps, DotRhsNonContractingOn2x4Mesh) {
  // [2,4] mesh: M tiled 2, N tiled 4, K whole: each device computes its tile.
  auto p = partition_text(
      module(
          "  a = f32[6,5] parameter(0), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}\n"
          "  b = f32[5,8] parameter(1), sharding={devices=[1,4,2]<=[2,4]T(1,0) "
          "last_tile_dim_replicate}\n"
          "  ROOT d = f32[6,8] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
          "sharding={devices=[2,4]<=[8]}\n"),
      8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_reduces + p.result.stats.all_gathers, 0);
}

TEST(SpmdOps, ReshapeMergeKeepsMajorTiling) {
  // [4,6] tiled 2 on dim 0 -> [24] tiled 2: local [2,6] -> [12], no collective.
  auto p = partition_text(module("  x = f32[4,6] parameter(0), sharding={devices=[2,1]<=[2]}\n"
                                 "  ROOT r = f32[24] reshape(x), sharding={devices=[2]<=[2]}\n"),
                          2);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.default_fallbacks + p.result.stats.all_gathers, 0);
}

TEST(SpmdOps, ReshapeSplitFromTargetOn2x2Mesh) {
  // [8,6] -> [2,4,6]; result tiled [2,1,2]: the operand is resharded to
  // [2,2] (here already so) and reshaped locally: [4,3] -> [1,4,3].
  auto p =
      partition_text(module("  x = f32[8,6] parameter(0), sharding={devices=[2,2]<=[4]}\n"
                            "  ROOT r = f32[2,4,6] reshape(x), sharding={devices=[2,1,2]<=[4]}\n"),
                     4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.default_fallbacks + p.result.stats.all_gathers, 0);
}

TEST(SpmdOps, ReshapeUnevenFallsBackCorrectly) {
  // 7 rows over 2 devices: padding would move under a local reshape, so the
  // default action (replicate, reshape, slice) runs.
  auto p = partition_text(module("  x = f32[7,2] parameter(0), sharding={devices=[2,1]<=[2]}\n"
                                 "  ROOT r = f32[14] reshape(x), sharding={devices=[2]<=[2]}\n"),
                          2);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.default_fallbacks, 1);
}

TEST(SpmdOps, DefaultActionStaysCorrect) {
  // A gather with batching dims has no handler: replicate the operands, run
  // the whole op, slice the result (one default fallback), still exact.
  // p[b, j] gathered at column i[b] for each batch row b.
  auto p = partition_text(
      module("  x = f32[4,6] parameter(0), sharding={devices=[4,1]<=[4]}\n"
             "  i = s32[4,1] parameter(1), sharding={devices=[4,1]<=[4]}\n"
             "  ROOT g = f32[4] gather(x, i), offset_dims={}, collapsed_slice_dims={1}, "
             "start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, "
             "index_vector_dim=1, slice_sizes={1,1}, sharding={devices=[4]<=[4]}\n"),
      4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.default_fallbacks, 1);
}

TEST(SpmdOps, MlpProgramSizeIndependentOfDeviceCount) {
  auto build = [](int n) {
    const std::string ns = std::to_string(n);
    return partition_text(
        module("  x = f32[16,8] parameter(0), sharding={devices=[" + ns + ",1]<=[" + ns +
               "]}\n"
               "  w = f32[8,16] parameter(1), sharding={devices=[1," +
               ns + "]<=[" + ns +
               "]}\n"
               "  h = f32[16,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
               "  z = f32[] constant(0)\n"
               "  ROOT r = f32[16] reduce(h, z), dimensions={1}, to_apply=add\n"),
        n);
  };
  auto two = build(2), eight = build(8);
  expect_equivalent(two);
  expect_equivalent(eight);
  EXPECT_EQ(two.result.module.entry().size(), eight.result.module.entry().size());
}

}  // namespace
}  // namespace podsim::compiler
