// Windowed einsum overlap: in the loop body the step's dot must
// not wait for the step's collective-permute (all-gather form: the dot
// multiplies the chunk HELD at the start of the step while the permute sends
// it on; reduce-scatter form: the block dot reads only the invariant
// operands), p - 1 permutes for p chunks; the bidirectional variant (halves
// both ways round the ring) stays numerically equivalent; and the loop is
// chosen by the cost comparison of partitioner.h (step dot time >= permute
// time).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "tests/compiler/spmd/dot_test_util.h"

namespace podsim::compiler {
namespace {

using spmd_dot_test::count_ops;
using spmd_dot_test::dot_module;
using spmd_dot_test::expect_equivalent;
using spmd_dot_test::forced_windowed;
using spmd_dot_test::partition;

const Instruction* find_while(const Module& m) {
  for (const Instruction& instr : m.entry().instructions())
    if (instr.opcode == Opcode::kWhile) return &instr;
  return nullptr;
}

// Does `id` (transitively, through operands) read an instruction of `op`?
bool reads_opcode(const Computation& c, InstrId id, Opcode op) {
  std::vector<bool> seen(static_cast<size_t>(c.size()), false);
  std::function<bool(InstrId)> visit = [&](InstrId x) {
    if (seen[static_cast<size_t>(x)]) return false;
    seen[static_cast<size_t>(x)] = true;
    for (InstrId operand : c.instr(x).operands)
      if (c.instr(operand).opcode == op || visit(operand)) return true;
    return false;
  };
  return visit(id);
}

int64_t count_in(const Computation& c, Opcode op) {
  return std::count_if(c.instructions().begin(), c.instructions().end(),
                       [&](const Instruction& instr) { return instr.opcode == op; });
}

// Every dot of the loop body is independent of every permute of the body,
// and every permute reads only loop state (a get-tuple-element of the
// parameter): the body's compute and communication can run at once.
void expect_body_overlaps(const Module& m, int64_t permutes_per_step) {
  const Instruction* loop = find_while(m);
  ASSERT_NE(loop, nullptr);
  const Computation& body = m.computation(loop->while_body());
  EXPECT_EQ(count_in(body, Opcode::kCollectivePermute), permutes_per_step);
  EXPECT_GE(count_in(body, Opcode::kDot), 1);
  for (InstrId id = 0; id < body.size(); ++id) {
    const Instruction& instr = body.instr(id);
    if (instr.opcode == Opcode::kDot) {
      EXPECT_FALSE(reads_opcode(body, id, Opcode::kCollectivePermute)) << instr.name;
    }
    if (instr.opcode == Opcode::kCollectivePermute) {
      EXPECT_EQ(body.instr(instr.operand(0)).opcode, Opcode::kGetTupleElement) << instr.name;
    }
  }
}

// lhs [16/p rows], rhs [N/p columns] -> the plan all-gathers the rhs on N
// (free dim): the free form of the all-gather loop.
std::string free_form(int p, int n) {
  const std::string ps = std::to_string(p), ns = std::to_string(n);
  return dot_module("  a = f32[16,6] parameter(0), sharding={devices=[" + ps + ",1]<=[" + ps +
                    "]}\n"
                    "  b = f32[6," +
                    ns + "] parameter(1), sharding={devices=[1," + ps + "]<=[" + ps +
                    "]}\n"
                    "  ROOT d = f32[16," +
                    ns +
                    "] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
                    "sharding={devices=[" +
                    ps + ",1]<=[" + ps + "]}\n");
}

// lhs [16/4 rows, K whole], rhs [K/4]: the rhs is rotated on K (contracting
// form); K = k may be uneven.
std::string contracting_form(int k) {
  const std::string ks = std::to_string(k);
  return dot_module(
      "  a = f32[16," + ks +
      "] parameter(0), sharding={devices=[4,1]<=[4]}\n"
      "  b = f32[" +
      ks +
      ",4] parameter(1), sharding={devices=[4,1]<=[4]}\n"
      "  ROOT d = f32[16,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
      "sharding={devices=[4,1]<=[4]}\n");
}

// K (k) tiled 4 ways on both operands, out tiled on N (n): the
// reduce-scatter form.
std::string reduce_scatter_form(int k, int n) {
  const std::string ks = std::to_string(k), ns = std::to_string(n);
  return dot_module("  a = f32[3," + ks +
                    "] parameter(0), sharding={devices=[1,4]<=[4]}\n"
                    "  b = f32[" +
                    ks + "," + ns +
                    "] parameter(1), sharding={devices=[4,1]<=[4]}\n"
                    "  ROOT d = f32[3," +
                    ns +
                    "] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
                    "sharding={devices=[1,4]<=[4]}\n");
}

TEST(WindowedOverlap, AllGatherFreeFormDotReadsHeldChunk) {
  // N = 8 over 4 devices: 4 chunks, steps 0..2 in the loop (3 permutes),
  // step 3 after it: the body has one permute and one dot, the entry the
  // last step's dot and no permute.
  auto p = partition(free_form(4, 8), 4, forced_windowed());
  expect_equivalent(p);
  expect_body_overlaps(p.result.module, 1);
  EXPECT_EQ(count_in(p.result.module.entry(), Opcode::kCollectivePermute), 0);
  EXPECT_EQ(count_in(p.result.module.entry(), Opcode::kDot), 1);
  EXPECT_EQ(p.result.stats.all_gathers, 0);
}

TEST(WindowedOverlap, AllGatherContractingFormDotReadsHeldChunk) {
  // K = 7 (uneven: chunks of 2, the last one's second row padding).
  auto p = partition(contracting_form(7), 4, forced_windowed());
  expect_equivalent(p, 3);
  expect_body_overlaps(p.result.module, 1);
  EXPECT_EQ(count_in(p.result.module.entry(), Opcode::kCollectivePermute), 0);
}

TEST(WindowedOverlap, ReduceScatterFormBlockDotIgnoresPermute) {
  auto p = partition(reduce_scatter_form(7, 5), 4, forced_windowed());
  expect_equivalent(p, 5);
  expect_body_overlaps(p.result.module, 1);
  EXPECT_EQ(p.result.stats.reduce_scatters + p.result.stats.all_reduces, 0);
}

TEST(WindowedOverlap, OnRingOfTwoOnlyTheLastStepFollowsTheLoop) {
  // p = 2: one loop step (chunk q, permute it), then chunk q + 1 after the loop.
  auto p = partition(free_form(2, 6), 2, forced_windowed());
  expect_equivalent(p);
  expect_body_overlaps(p.result.module, 1);
}

// Bidirectional: two permutes per step with mirrored pairs, both halves
// multiplied without waiting for them.
void expect_mirrored_permutes(const Module& m) {
  const Computation& body = m.computation(find_while(m)->while_body());
  std::vector<const Instruction*> permutes;
  for (const Instruction& instr : body.instructions())
    if (instr.opcode == Opcode::kCollectivePermute) permutes.push_back(&instr);
  ASSERT_EQ(permutes.size(), 2u);
  auto pairs = permutes[1]->attrs.source_target_pairs;
  for (auto& [s, t] : pairs) std::swap(s, t);
  auto first = permutes[0]->attrs.source_target_pairs;
  std::sort(pairs.begin(), pairs.end());
  std::sort(first.begin(), first.end());
  EXPECT_EQ(first, pairs);
}

TEST(WindowedOverlap, BidirectionalAllGatherFreeForm) {
  // N = 16 over 4: chunks of t = 4, halves of 2 columns each way.
  auto p = partition(free_form(4, 16), 4, forced_windowed(true));
  expect_equivalent(p);
  expect_body_overlaps(p.result.module, 2);
  expect_mirrored_permutes(p.result.module);
  EXPECT_EQ(p.result.stats.all_gathers, 0);
}

TEST(WindowedOverlap, BidirectionalAllGatherFreeFormUneven) {
  // N = 11 over 4: t = 3, halves of 2 and 1 columns; the last chunk holds
  // 2 real columns (9, 10) and one of padding, sliced off after the loop.
  auto p = partition(free_form(4, 11), 4, forced_windowed(true));
  expect_equivalent(p, 2);
  expect_body_overlaps(p.result.module, 2);
}

TEST(WindowedOverlap, BidirectionalAllGatherContractingUneven) {
  // K = 13 over 4: t = 4, halves of 2 rows; chunk 3 covers rows 12..15 of
  // which 13..15 are padding, masked in both halves.
  // Both halves go through ONE dot per step (concatenated on K).
  auto p = partition(contracting_form(13), 4, forced_windowed(true));
  expect_equivalent(p, 4);
  expect_body_overlaps(p.result.module, 2);
  expect_mirrored_permutes(p.result.module);
  EXPECT_EQ(count_in(p.result.module.computation(find_while(p.result.module)->while_body()),
                     Opcode::kDot),
            1);
}

TEST(WindowedOverlap, BidirectionalFallsBackToOneWayForSingleRowChunks) {
  // K = 4 over 4: t = 1 cannot be halved: one stream, one permute.
  auto p = partition(contracting_form(4), 4, forced_windowed(true));
  expect_equivalent(p);
  expect_body_overlaps(p.result.module, 1);
}

TEST(WindowedOverlap, BidirectionalReduceScatterUneven) {
  // N = 11 over 4: blocks of t = 3, halves of 2 and 1 columns flowing
  // opposite ways; K = 7 uneven too.
  auto p = partition(reduce_scatter_form(7, 11), 4, forced_windowed(true));
  expect_equivalent(p, 6);
  expect_body_overlaps(p.result.module, 2);
  expect_mirrored_permutes(p.result.module);
  EXPECT_EQ(
      p.result.stats.reduce_scatters + p.result.stats.all_reduces + p.result.stats.all_gathers, 0);
}

TEST(WindowedOverlap, BidirectionalReduceScatterInside2DGroups) {
  // [2,2] mesh (SpmdWindowedDot.ReduceScatterFormInside2DGroups): rings of
  // 2 within the y pairs; N = 8 gives blocks of 4, halves of 2.
  auto p = partition(
      dot_module(
          "  a = f32[6,8] parameter(0), sharding={devices=[2,2]<=[4]}\n"
          "  b = f32[8,8] parameter(1), sharding={devices=[2,1,2]<=[2,2]T(1,0) "
          "last_tile_dim_replicate}\n"
          "  ROOT d = f32[6,8] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
          "sharding={devices=[2,2]<=[4]}\n"),
      4, forced_windowed(true));
  expect_equivalent(p);
  expect_body_overlaps(p.result.module, 2);
}

TEST(WindowedOverlap, BidirectionalAllGatherOnSubgroups) {
  // [2,2] mesh (SpmdWindowedDot.EinsumLHSWindowedNonContractingOnSubgroups):
  // the lhs rotates within pairs {0,1}, {2,3}; M = 8 -> t = 4, halves of 2.
  auto p = partition(
      dot_module(
          "  a = f32[8,3] parameter(0), sharding={devices=[2,1,2]<=[2,2]T(1,0) "
          "last_tile_dim_replicate}\n"
          "  b = f32[3,16] parameter(1), sharding={devices=[1,2,2]<=[4] last_tile_dim_replicate}\n"
          "  ROOT d = f32[8,16] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
          "sharding={devices=[1,2,2]<=[4] last_tile_dim_replicate}\n"),
      4, forced_windowed(true));
  expect_equivalent(p);
  expect_body_overlaps(p.result.module, 2);
}

// Cost comparison with the default threshold. free form on 2 devices with
// bf16 operands a [M, 2], b [2, 4] (b rotated on N): per device the plan's
// dot is (M/2) x 2 x 4 multiply-adds; a step does 2 * (M/2) * 2 * 4 / 2 =
// 8 * (M/2) flops against a chunk of 2 x 2 bf16 = 8 B: M/2 flops per byte,
// the tokens per device of the weight-rotating case.
std::string bf16_rows(int m, int n = 4) {
  const std::string ms = std::to_string(m), ns = std::to_string(n);
  return dot_module("  a = bf16[" + ms +
                    ",2] parameter(0), sharding={devices=[2,1]<=[2]}\n"
                    "  b = bf16[2," +
                    ns +
                    "] parameter(1), sharding={devices=[1,2]<=[2]}\n"
                    "  ROOT d = bf16[" +
                    ms + "," + ns +
                    "] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
                    "sharding={devices=[2,1]<=[2]}\n");
}

SpmdOptions default_cost(bool bidirectional) {
  SpmdOptions o;
  o.windowed_einsum_threshold_bytes = 0;  // only the cost comparison decides
  o.windowed_einsum_bidirectional = bidirectional;
  return o;
}

TEST(WindowedOverlap, DefaultThresholdIsTpuV3PeakOverOneLinkDirection) {
  // hardware.md: 61.5e12 flop/s per core, ICI 1e11 B/s per direction x 0.83.
  EXPECT_NEAR(SpmdOptions{}.windowed_einsum_min_flops_per_byte, 61.5e12 / (1e11 * 0.83), 1.0);
}

TEST(WindowedOverlap, OneWayLoopNeedsAbout741RowsPerDevice) {
  // 512 rows per device (the 1T config's tokens per device row): 512 < 741
  // flops per byte, the permute would be exposed: all-gather. 768 rows: loop.
  auto short_steps = partition(bf16_rows(1024), 2, default_cost(false));
  auto long_steps = partition(bf16_rows(1536), 2, default_cost(false));
  EXPECT_EQ(count_ops(short_steps.result.module, {Opcode::kWhile}), 0);
  EXPECT_EQ(short_steps.result.stats.all_gathers, 1);
  EXPECT_EQ(count_ops(long_steps.result.module, {Opcode::kWhile}), 1);
  EXPECT_EQ(long_steps.result.stats.all_gathers, 0);
}

TEST(WindowedOverlap, BidirectionalHalvesTheRowsNeeded) {
  // Each direction carries half the chunk: 741 / 2 = 370.5 flops per byte.
  // 512 rows now take the loop, 256 still do not.
  auto loop = partition(bf16_rows(1024), 2, default_cost(true));
  auto gather = partition(bf16_rows(512), 2, default_cost(true));
  EXPECT_EQ(count_ops(loop.result.module, {Opcode::kWhile}), 1);
  EXPECT_EQ(count_ops(gather.result.module, {Opcode::kWhile}), 0);
}

TEST(WindowedOverlap, BidirectionalCostCountsOneDirectionWhenChunksCannotBeHalved) {
  // N = 2 over 2 devices: chunks of one column (t = 1) travel one way only.
  // Per device (M/2) x 2 x 2 multiply-adds, a step 2 * 2M / 2 = 2M flops
  // against a 2 x 1 bf16 chunk of 4 B: M/2 flops per byte again; 512 rows
  // are below 741 (the two-direction 370.5 does not apply).
  auto p = partition(bf16_rows(1024, 2), 2, default_cost(true));
  EXPECT_EQ(count_ops(p.result.module, {Opcode::kWhile}), 0);
  auto q = partition(bf16_rows(1536, 2), 2, default_cost(true));
  EXPECT_EQ(count_ops(q.result.module, {Opcode::kWhile}), 1);
}

}  // namespace
}  // namespace podsim::compiler
