// Windowed einsum (docs/reference/gspmd.md#windowed-einsum, #partitioner-checklist item 21): with
// the threshold at 0 an all-gather of one operand dim becomes a counted while loop that rotates the
// operand's shard round its ring: no all-gather, one collective-permute instruction (in the loop
// body), p - 1 iterations, and a program whose size does not depend on p.
#include <gtest/gtest.h>

#include "compiler/ir/trip_count.h"
#include "tests/compiler/spmd/dot_test_util.h"

namespace podsim::compiler {
namespace {

using spmd_dot_test::count_ops;
using spmd_dot_test::dot_module;
using spmd_dot_test::expect_equivalent;
using spmd_dot_test::forced_windowed;
using spmd_dot_test::partition;

SpmdOptions forced_options(double min_flops_per_byte) {
  SpmdOptions o;
  o.windowed_einsum_threshold_bytes = 0;
  o.windowed_einsum_min_flops_per_byte = min_flops_per_byte;
  return o;
}

// Iterations of the counted loop the windowed einsum emits, derived from its
// pattern (init constant, compare with a constant, counter + 1) as the
// simulator derives it (known_trip_count), not read from a backend_config.
int64_t trip_count(const Module& m, const Instruction& loop) {
  EXPECT_TRUE(loop.attrs.backend_config.empty());
  return known_trip_count(m, m.entry(), loop).value_or(-1);
}

const Instruction* find_while(const Module& m) {
  for (const Instruction& instr : m.entry().instructions())
    if (instr.opcode == Opcode::kWhile) return &instr;
  return nullptr;
}

// lhs [M/p] (rows), rhs [N/p] (columns), out [M/p]: the plan all-gathers the
// rhs (see SpmdDot.LhsNonContractingAllGathersSmallerRhs); windowed, each
// step multiplies by one column block and writes it at c*t of the result.
std::string non_contracting(int p, int n) {
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

TEST(SpmdWindowedDot, EinsumRHSWindowedNonContracting) {
  // N = 7 over 4 devices (uneven: chunks of 2, the last half padding).
  auto p = partition(non_contracting(4, 7), 4, forced_windowed());
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_gathers, 0);
  EXPECT_EQ(count_ops(p.result.module, {Opcode::kCollectivePermute}), 1);
  const Instruction* loop = find_while(p.result.module);
  ASSERT_NE(loop, nullptr);
  // Step 0 runs before the loop, steps 1..p-1 inside: p - 1 = 3 iterations.
  EXPECT_EQ(trip_count(p.result.module, *loop), 3);
}

TEST(SpmdWindowedDot, DefaultThresholdKeepsAllGatherForSmallOperands) {
  auto p = partition(non_contracting(4, 8), 4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_gathers, 1);
  EXPECT_EQ(find_while(p.result.module), nullptr);
}

TEST(SpmdWindowedDot, EinsumRHSWindowedContracting) {
  // lhs [M/4] with K whole, rhs [K/4] (K = 7, uneven), out [M/4]. Gathering
  // the rhs (3/4 * 7*4*4 B = 84 B) beats moving the 16x7 lhs; windowed, each
  // step multiplies the lhs's K slice c*t..c*t+t by chunk c and accumulates,
  // the chunk's padding zeroed.
  auto p = partition(
      dot_module(
          "  a = f32[16,7] parameter(0), sharding={devices=[4,1]<=[4]}\n"
          "  b = f32[7,4] parameter(1), sharding={devices=[4,1]<=[4]}\n"
          "  ROOT d = f32[16,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
          "sharding={devices=[4,1]<=[4]}\n"),
      4, forced_windowed());
  expect_equivalent(p, 9);
  EXPECT_EQ(p.result.stats.all_gathers + p.result.stats.all_reduces, 0);
  EXPECT_EQ(count_ops(p.result.module, {Opcode::kCollectivePermute}), 1);
  const Instruction* loop = find_while(p.result.module);
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(trip_count(p.result.module, *loop), 3);
}

TEST(SpmdWindowedDot, EinsumLHSWindowedNonContractingOnSubgroups) {
  // [2,2] mesh, device 2x + y: lhs [M/y] replicated over x, rhs [N/x]
  // replicated over y, out [N/x] replicated over y. Gathering the lhs's M
  // within each y pair costs 1/2 * 6*3*4 B = 36 B; keeping M tiled and
  // gathering the out instead 1/2 * 6*8*4 B = 96 B. Windowed, the lhs ring
  // runs inside each pair {0,1}, {2,3}: one iteration each.
  auto p = partition(
      dot_module(
          "  a = f32[6,3] parameter(0), sharding={devices=[2,1,2]<=[2,2]T(1,0) "
          "last_tile_dim_replicate}\n"
          "  b = f32[3,16] parameter(1), sharding={devices=[1,2,2]<=[4] last_tile_dim_replicate}\n"
          "  ROOT d = f32[6,16] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
          "sharding={devices=[1,2,2]<=[4] last_tile_dim_replicate}\n"),
      4, forced_windowed());
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_gathers, 0);
  EXPECT_EQ(count_ops(p.result.module, {Opcode::kWhile}), 1);
  const Instruction* loop = find_while(p.result.module);
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(trip_count(p.result.module, *loop), 1);
}

TEST(SpmdWindowedDot, EinsumWindowedReduceScatterUneven) {
  // K (7, uneven) tiled 4 ways on both operands, out tiled on N (5, uneven)
  // with device k of the K group holding column block k: the reduce-scatter
  // form. Each step adds this device's partial of one column block (t = 2)
  // to the running sum received from the next position: no reduce-scatter,
  // one permute instruction, p - 1 = 3 iterations.
  auto p = partition(
      dot_module(
          "  a = f32[3,7] parameter(0), sharding={devices=[1,4]<=[4]}\n"
          "  b = f32[7,5] parameter(1), sharding={devices=[4,1]<=[4]}\n"
          "  ROOT d = f32[3,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
          "sharding={devices=[1,4]<=[4]}\n"),
      4, forced_windowed());
  expect_equivalent(p, 5);
  EXPECT_EQ(
      p.result.stats.reduce_scatters + p.result.stats.all_reduces + p.result.stats.all_gathers, 0);
  EXPECT_EQ(count_ops(p.result.module, {Opcode::kCollectivePermute}), 1);
  const Instruction* loop = find_while(p.result.module);
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(trip_count(p.result.module, *loop), 3);
}

TEST(SpmdWindowedDot, ReduceScatterFormInside2DGroups) {
  // [2,2] mesh as in SpmdDot.Dot2DPartitionedNonContractingAndContractingReduceScatter:
  // the K sums run within y pairs, so the ring has 2 positions: 1 iteration.
  auto p = partition(
      dot_module(
          "  a = f32[6,8] parameter(0), sharding={devices=[2,2]<=[4]}\n"
          "  b = f32[8,5] parameter(1), sharding={devices=[2,1,2]<=[2,2]T(1,0) "
          "last_tile_dim_replicate}\n"
          "  ROOT d = f32[6,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
          "sharding={devices=[2,2]<=[4]}\n"),
      4, forced_windowed());
  expect_equivalent(p);
  EXPECT_EQ(
      p.result.stats.reduce_scatters + p.result.stats.all_reduces + p.result.stats.all_gathers, 0);
  const Instruction* loop = find_while(p.result.module);
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(trip_count(p.result.module, *loop), 1);
}

TEST(SpmdWindowedDot, ProgramSizeIndependentOfDeviceCount) {
  auto two = partition(non_contracting(2, 8), 2, forced_windowed());
  auto eight = partition(non_contracting(8, 8), 8, forced_windowed());
  expect_equivalent(two);
  expect_equivalent(eight);
  ASSERT_NE(find_while(eight.result.module), nullptr);
  EXPECT_EQ(trip_count(eight.result.module, *find_while(eight.result.module)), 7);
  // Same instruction count in every computation (entry, body, condition).
  ASSERT_EQ(two.result.module.computations().size(), eight.result.module.computations().size());
  for (size_t c = 0; c < two.result.module.computations().size(); ++c)
    EXPECT_EQ(two.result.module.computations()[c].size(),
              eight.result.module.computations()[c].size())
        << c;
}

TEST(SpmdWindowedDot, OverlapTestKeepsAllGatherWhenStepsAreTooSmall) {
  // Windowed plan of non_contracting(4, 8): per device the plan's dot is
  // 4 rows x 6 x 8 = 192 multiply-adds, 2*192/4 = 96 flops per step, and a
  // chunk is 6x2 f32 = 48 B: 2 flops/B. Requiring 2 keeps the loop,
  // requiring 3 falls back to the all-gather.
  SpmdOptions enough = forced_options(2.0), too_much = forced_options(3.0);
  auto kept = partition(non_contracting(4, 8), 4, enough);
  auto gathered = partition(non_contracting(4, 8), 4, too_much);
  expect_equivalent(kept);
  expect_equivalent(gathered);
  EXPECT_EQ(count_ops(kept.result.module, {Opcode::kWhile}), 1);
  EXPECT_EQ(count_ops(gathered.result.module, {Opcode::kWhile}), 0);
  EXPECT_EQ(gathered.result.stats.all_gathers, 1);
}

}  // namespace
}  // namespace podsim::compiler
