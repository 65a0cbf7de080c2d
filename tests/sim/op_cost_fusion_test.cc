// HBM bytes of whole fusion plans (compiler/backend/fusion.h grouping,
// sim/op_cost.h charging) in closed form: duplicated cheap producers cost
// their readers' inputs, never a write of their own.
#include <gtest/gtest.h>

#include <string>

#include "compiler/backend/fusion.h"
#include "compiler/hlo/hlo_parser.h"
#include "sim/op_cost.h"
#include "tests/compiler/backend/fusion_fixtures.h"

namespace podsim::sim {
namespace {

struct PlanBytes {
  double read = 0;
  double written = 0;
};

// Every kernel of the plan: each group once, each unfused compute op once.
PlanBytes plan_bytes(const compiler::Computation& c, const compiler::FusionPlan& plan) {
  PlanBytes total;
  for (const compiler::FusionGroup& g : plan.groups) {
    const hw::OpQuery q = fusion_query(c, g);
    total.read += q.hbm_bytes_read;
    total.written += q.hbm_bytes_written;
  }
  for (compiler::InstrId id = 0; id < c.size(); ++id) {
    if (plan.group_of[static_cast<size_t>(id)] >= 0 || classify(c.instr(id)) != OpClass::kCompute)
      continue;
    const hw::OpQuery q = op_query(c, c.instr(id));
    total.read += q.hbm_bytes_read;
    total.written += q.hbm_bytes_written;
  }
  return total;
}

// Softmax over x: f32[a, b] whose denominator broadcast bz is also read by
// a second consumer t = dy / bz (as softmax's gradient reads it).
// N = a*b*4 bytes (x, dy, exp, y, t), R = a*4 bytes (max, sum).
// Kernels (fusion_duplication_test.cc has the grouping):
//   {ninf, mx}             reads x      N   writes mx      R
//   {bm, s, ex, zero, z}   reads x, mx  N+R writes ex, z   N+R (multi-output)
//   {bz, y}                reads ex, z  N+R writes y       N
//   {bz, t}                reads dy, z  N+R writes t       N
// read 4N + 3R, written 3N + 2R. Without multi-output fusion the sum would
// read ex again (+N); without duplication bz would be a broadcast kernel
// (reads R, writes N) and y, t unfused divides reading ex/dy and bz (2N
// each): read 7N + 2R, written 4N + 2R with neither.
TEST(OpCostFusion, SoftmaxWithSharedDenominatorBytes) {
  const auto m =
      compiler::parse_hlo(std::string("HloModule m\n") + compiler::fusion_fixtures::kReducers +
                          compiler::fusion_fixtures::kSoftmaxWithSharedDenominator);
  const compiler::Computation& c = m.entry();
  const double n = 64.0 * 256 * 4;
  const double r = 64.0 * 4;
  const PlanBytes fused = plan_bytes(c, compiler::plan_fusion(c));
  EXPECT_DOUBLE_EQ(fused.read, 4 * n + 3 * r);
  EXPECT_DOUBLE_EQ(fused.written, 3 * n + 2 * r);
}

// The partitioner's per-device constant: ds = dynamic-slice(broadcast(0.5))
// scales p and q (N = 8*1024*4 bytes each) in two kernels. Duplicated, each
// kernel reads its input (N) and the slice index i (4 B; the constants c
// and z are members) and writes its result (N): read 2N + 8, written 2N.
// A kernel writing ds would add a write of N and a read of N per reader.
TEST(OpCostFusion, DuplicatedBroadcastSliceCostsNoBytes) {
  const auto m = compiler::parse_hlo(std::string("HloModule m\n") +
                                     compiler::fusion_fixtures::kScaledBySliceOfBroadcast);
  const compiler::Computation& c = m.entry();
  const double n = 8.0 * 1024 * 4;
  const compiler::FusionPlan plan = compiler::plan_fusion(c);
  ASSERT_EQ(plan.groups.size(), 2u);
  const PlanBytes fused = plan_bytes(c, plan);
  EXPECT_DOUBLE_EQ(fused.read, 2 * n + 2 * 4);
  EXPECT_DOUBLE_EQ(fused.written, 2 * n);
}

// Multi-output fusion: e = exp(a * b) (N = 64*256*4 bytes) is reduced by z
// and read by y = e / broadcast(z) after it. Kernels:
//   {m, e, zero, z}  reads a, b  2N   writes e, z  N+R (e is an extra output)
//   {bz, y}          reads e, z  N+R  writes y     N
// read 3N + R, written 2N + R (separate kernels: e's reads 2N writes N,
// z's reads N writes R: one more read of N).
TEST(OpCostFusion, MultiOutputKernelWritesItsExtraOutput) {
  const auto m =
      compiler::parse_hlo(std::string("HloModule m\n") + compiler::fusion_fixtures::kReducers +
                          compiler::fusion_fixtures::kNormalize);
  const compiler::Computation& c = m.entry();
  const double n = 64.0 * 256 * 4;
  const double r = 64.0 * 4;
  const compiler::FusionPlan plan = compiler::plan_fusion(c);
  ASSERT_EQ(plan.groups.size(), 2u);
  const PlanBytes fused = plan_bytes(c, plan);
  EXPECT_DOUBLE_EQ(fused.read, 3 * n + r);
  EXPECT_DOUBLE_EQ(fused.written, 2 * n + r);
}

}  // namespace
}  // namespace podsim::sim
