// Op cost mapping: instructions -> hw::OpQuery, and a lone op's simulated
// time equals the core model's own query.
#include <gtest/gtest.h>

#include "sim/op_cost.h"
#include "tests/sim/sim_test_util.h"

namespace podsim::sim {
namespace {

using testing::make_system;
using testing::program_from_hlo;
using testing::ring_system;
using testing::run;

const compiler::Instruction& find(const compiler::Module& m, const std::string& name) {
  const auto& entry = m.entry();
  return entry.instr(entry.find(name));
}

TEST(OpCost, SingleDotEqualsCoreModelMatmul) {
  const auto program = program_from_hlo(R"(HloModule dot, num_partitions=2
ENTRY %main (a: bf16[256,512], b: bf16[512,1024]) -> bf16[256,1024] {
  %a = bf16[256,512]{1,0} parameter(0)
  %b = bf16[512,1024]{1,0} parameter(1)
  ROOT %d = bf16[256,1024]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  const hw::System system = ring_system(2);
  const Timeline t = run(program, system);
  // The dot is m=256, k=512, n=1024 with bf16 operands and a bf16 result in HBM.
  hw::MatmulQuery q;
  q.work = hw::MatmulWork{1, 256, 512, 1024, hw::MatmulInputKind::kBf16};
  q.input_bytes_per_element = 2;
  q.output_bytes_per_element = 2;
  const hw::OpTiming expected = system.core().time_matmul(q);
  EXPECT_NEAR(t.step_time_s, expected.seconds, 1e-12);  // SystemC time resolution: 1 ps
  EXPECT_NEAR(t.compute_s, expected.seconds, 1e-12);
  EXPECT_EQ(t.exposed_communication_s, 0);
  ASSERT_EQ(t.ops.size(), 1u);
  EXPECT_EQ(t.ops[0].name, "d");
  EXPECT_EQ(t.ops[0].executions, 1);
  EXPECT_DOUBLE_EQ(t.ops[0].flops, 2.0 * 256 * 512 * 1024);  // 2 FLOP per MAC
  EXPECT_DOUBLE_EQ(t.executed_flops_per_device, 2.0 * 256 * 512 * 1024);
  EXPECT_EQ(t.ops[0].bound, expected.bound);
  EXPECT_EQ(t.devices_simulated, 1);
}

TEST(OpCost, DotDimsMapToBatchMKN) {
  const auto m = compiler::parse_hlo(R"(HloModule dots
ENTRY %main (a: f32[4,3,8,16,5], b: f32[4,16,5,7]) -> f32[4,3,8,7] {
  %a = f32[4,3,8,16,5]{4,3,2,1,0} parameter(0)
  %b = f32[4,16,5,7]{3,2,1,0} parameter(1)
  ROOT %d = f32[4,3,8,7]{3,2,1,0} dot(%a, %b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={3,4}, rhs_contracting_dims={1,2}
})");
  const hw::OpQuery q = op_query(m.entry(), find(m, "d"));
  ASSERT_EQ(q.matmuls.size(), 1u);
  // batch = 4; m = 3*8 (lhs free dims); k = 16*5; n = 7 (rhs free dim); f32 -> f32 MXU passes.
  EXPECT_EQ(q.matmuls[0].batch, 4);
  EXPECT_EQ(q.matmuls[0].m, 24);
  EXPECT_EQ(q.matmuls[0].k, 80);
  EXPECT_EQ(q.matmuls[0].n, 7);
  EXPECT_EQ(q.matmuls[0].input, hw::MatmulInputKind::kF32);
  // Operands read once, result written once (4 bytes per f32 element).
  EXPECT_DOUBLE_EQ(q.hbm_bytes_read, 4.0 * (4 * 3 * 8 * 16 * 5 + 4 * 16 * 5 * 7));
  EXPECT_DOUBLE_EQ(q.hbm_bytes_written, 4.0 * (4 * 3 * 8 * 7));
}

TEST(OpCost, ConvolutionIsIm2colMatmul) {
  const auto m = compiler::parse_hlo(R"(HloModule conv
ENTRY %main (x: bf16[2,10,10,8], k: bf16[3,3,8,16]) -> bf16[2,8,8,16] {
  %x = bf16[2,10,10,8]{3,2,1,0} parameter(0)
  %k = bf16[3,3,8,16]{3,2,1,0} parameter(1)
  ROOT %c = bf16[2,8,8,16]{3,2,1,0} convolution(%x, %k), window={size=3x3}, dim_labels=b01f_01io->b01f
})");
  const hw::OpQuery q = op_query(m.entry(), find(m, "c"));
  ASSERT_EQ(q.matmuls.size(), 1u);
  // m = batch 2 x 8x8 output pixels; k = 3x3 window x 8 input features; n = 16.
  EXPECT_EQ(q.matmuls[0].m, 2 * 8 * 8);
  EXPECT_EQ(q.matmuls[0].k, 3 * 3 * 8);
  EXPECT_EQ(q.matmuls[0].n, 16);
  EXPECT_EQ(q.matmuls[0].input, hw::MatmulInputKind::kBf16);
}

TEST(OpCost, VectorCostClassesAndFreeOps) {
  const auto m = compiler::parse_hlo(R"(HloModule vec
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %add = f32[] add(%x, %y)
}
ENTRY %main (a: f32[64,128]) -> f32[64] {
  %a = f32[64,128]{1,0} parameter(0)
  %e = f32[64,128]{1,0} exponential(%a)
  %s = f32[64,128]{1,0} add(%e, %a)
  %c = bf16[64,128]{1,0} convert(%s)
  %t = bf16[128,64]{1,0} transpose(%c), dimensions={1,0}
  %r = bf16[8192]{0} reshape(%t)
  %zero = f32[] constant(0)
  ROOT %red = f32[64]{0} reduce(%s, %zero), dimensions={1}, to_apply=%sum
})");
  auto cls = [&](const std::string& name) { return op_query(m.entry(), find(m, name)).vector_work.at(0).cost_class; };
  EXPECT_EQ(cls("e"), hw::VectorCostClass::kTranscendental);
  EXPECT_EQ(cls("s"), hw::VectorCostClass::kSimple);
  EXPECT_EQ(cls("c"), hw::VectorCostClass::kConvert);
  EXPECT_EQ(cls("t"), hw::VectorCostClass::kTranspose);
  EXPECT_EQ(cls("red"), hw::VectorCostClass::kReduce);
  // A reduce processes its input's elements, not its result's.
  EXPECT_EQ(op_query(m.entry(), find(m, "red")).vector_work[0].elements, 64 * 128);
  EXPECT_EQ(classify(find(m, "r")), OpClass::kFree);
  EXPECT_EQ(classify(find(m, "zero")), OpClass::kFree);
  EXPECT_EQ(classify(find(m, "a")), OpClass::kFree);
}

TEST(OpCost, MemoryOpsMoveOnlyTheirBytes) {
  const auto m = compiler::parse_hlo(R"(HloModule mem
ENTRY %main (a: f32[64,128], u: f32[8,128], i: s32[]) -> f32[64,128] {
  %a = f32[64,128]{1,0} parameter(0)
  %u = f32[8,128]{1,0} parameter(1)
  %i = s32[] parameter(2)
  %sl = f32[16,128]{1,0} slice(%a), slice={[0:16], [0:128]}
  %zero = s32[] constant(0)
  ROOT %dus = f32[64,128]{1,0} dynamic-update-slice(%a, %u, %i, %zero)
})");
  // A slice reads the 16 rows it keeps and writes them.
  const hw::OpQuery sl = op_query(m.entry(), find(m, "sl"));
  EXPECT_DOUBLE_EQ(sl.hbm_bytes_read, 16 * 128 * 4);
  EXPECT_DOUBLE_EQ(sl.hbm_bytes_written, 16 * 128 * 4);
  EXPECT_TRUE(sl.matmuls.empty() && sl.vector_work.empty());
  // A dynamic-update-slice updates in place: the 8-row update read and written.
  const hw::OpQuery dus = op_query(m.entry(), find(m, "dus"));
  EXPECT_DOUBLE_EQ(dus.hbm_bytes_read, 8 * 128 * 4);
  EXPECT_DOUBLE_EQ(dus.hbm_bytes_written, 8 * 128 * 4);
}

TEST(OpCost, FusionReadsExternalInputsOnceAndWritesRoot) {
  const auto m = compiler::parse_hlo(R"(HloModule fused
ENTRY %main (a: f32[64,128], b: f32[64,128]) -> f32[64,128] {
  %a = f32[64,128]{1,0} parameter(0)
  %b = f32[64,128]{1,0} parameter(1)
  %x = f32[64,128]{1,0} multiply(%a, %b)
  %y = f32[64,128]{1,0} add(%x, %a)
  ROOT %z = f32[64,128]{1,0} tanh(%y)
})");
  compiler::FusionGroup group;
  group.members = {m.entry().find("x"), m.entry().find("y"), m.entry().find("z")};
  const hw::OpQuery q = fusion_query(m.entry(), group);
  // External inputs a and b (a used twice, read once); root z written once.
  EXPECT_DOUBLE_EQ(q.hbm_bytes_read, 2.0 * 64 * 128 * 4);
  EXPECT_DOUBLE_EQ(q.hbm_bytes_written, 64.0 * 128 * 4);
  ASSERT_EQ(q.vector_work.size(), 3u);
  EXPECT_EQ(q.vector_work[2].cost_class, hw::VectorCostClass::kTranscendental);
}

TEST(OpCost, RepeatedOpsHitTheCache) {
  const hw::System system = make_system({8});
  const auto m = compiler::parse_hlo(R"(HloModule rep
ENTRY %main (a: f32[64,128], b: f32[64,128]) -> f32[64,128] {
  %a = f32[64,128]{1,0} parameter(0)
  %b = f32[64,128]{1,0} parameter(1)
  %x = f32[64,128]{1,0} multiply(%a, %b)
  ROOT %y = f32[64,128]{1,0} multiply(%x, %b)
})");
  OpCostModel costs(system.core());
  const OpCost x = costs.instruction(m.entry(), find(m, "x"));
  const OpCost y = costs.instruction(m.entry(), find(m, "y"));
  EXPECT_EQ(x.seconds, y.seconds);
  EXPECT_EQ(costs.cache_hits(), 1);
  EXPECT_EQ(costs.cache_misses(), 1);
}

}  // namespace
}  // namespace podsim::sim

namespace podsim::sim {
namespace {

TEST(OpCost, FusedGroupRunsAsOneStepAtItsRoot) {
  auto program = testing::program_from_hlo(R"(HloModule fused, num_partitions=2
ENTRY %main (a: f32[256,128], b: f32[256,128]) -> f32[256,128] {
  %a = f32[256,128]{1,0} parameter(0)
  %b = f32[256,128]{1,0} parameter(1)
  %x = f32[256,128]{1,0} multiply(%a, %b)
  %y = f32[256,128]{1,0} add(%x, %a)
  ROOT %z = f32[256,128]{1,0} tanh(%y)
})");
  const auto& entry = program.module.entry();
  compiler::FusionPlan plan;
  plan.group_of.assign(static_cast<size_t>(entry.size()), -1);
  compiler::FusionGroup group;
  group.members = {entry.find("x"), entry.find("y"), entry.find("z")};
  for (auto id : group.members) plan.group_of[static_cast<size_t>(id)] = 0;
  plan.groups.push_back(group);
  program.fusion.resize(static_cast<size_t>(program.module.computation_count()));
  program.fusion[static_cast<size_t>(program.module.entry_id())] = plan;
  const hw::System system = testing::ring_system(2);
  const Timeline t = testing::run(program, system);
  // One kernel: the core model's time for the group's merged query.
  const double expected = system.core().time_op(fusion_query(entry, group)).seconds;
  EXPECT_NEAR(t.step_time_s, expected, 1e-12);
  ASSERT_EQ(t.ops.size(), 1u);
  EXPECT_EQ(t.ops[0].opcode, "fusion");
  EXPECT_EQ(t.ops[0].name, "z");
  EXPECT_EQ(t.ops[0].executions, 1);
}

}  // namespace
}  // namespace podsim::sim
