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

TEST(OpCost, SparseDotIsTheDenseDotOfItsLogicalOperands) {
  // lhs stores f32[8,64] of a logical f32[8,128] (2:4 on the contracting dim);
  // rhs is R-sparse in the second dot: f32[64,16] of a logical f32[128,16].
  // Both are m = 8, k = 128, n = 16: TPU matrix units multiply the zeros too.
  const auto m = compiler::parse_hlo(R"(HloModule sparse
ENTRY %main (a: f32[8,64], b: f32[128,16], meta: u16[8,8], c: f32[8,128], e: f32[64,16], meta2: u16[8,16]) -> (f32[8,16], f32[8,16]) {
  %a = f32[8,64] parameter(0)
  %b = f32[128,16] parameter(1)
  %meta = u16[8,8] parameter(2)
  %c = f32[8,128] parameter(3)
  %e = f32[64,16] parameter(4)
  %meta2 = u16[8,16] parameter(5)
  %l = f32[8,16] dot(%a, %b, %meta), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sparsity=L.1@2:4
  %r = f32[8,16] dot(%c, %e, %meta2), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sparsity=R.0@2:4
  ROOT %t = (f32[8,16], f32[8,16]) tuple(%l, %r)
})");
  for (const char* name : {"l", "r"}) {
    const hw::OpQuery q = op_query(m.entry(), find(m, name));
    ASSERT_EQ(q.matmuls.size(), 1u) << name;
    EXPECT_EQ(q.matmuls[0].m, 8) << name;
    EXPECT_EQ(q.matmuls[0].k, 128) << name;
    EXPECT_EQ(q.matmuls[0].n, 16) << name;
  }
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
  auto cls = [&](const std::string& name) {
    return op_query(m.entry(), find(m, name)).vector_work.at(0).cost_class;
  };
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

// Regression (1T run 74% "memory-bound"): a fused dynamic-slice was charged
// its whole input, so a windowed einsum's loop read the whole gathered
// operand (32x its shard) in every iteration.
TEST(OpCost, FusedDynamicSliceReadsOnlyItsWindow) {
  const auto m = compiler::parse_hlo(R"(HloModule ds
ENTRY %main (big: bf16[32,256,128], i: s32[], w: bf16[1,256,128]) -> bf16[1,256,128] {
  %big = bf16[32,256,128]{2,1,0} parameter(0)
  %i = s32[] parameter(1)
  %w = bf16[1,256,128]{2,1,0} parameter(2)
  %z = s32[] constant(0)
  %ds = bf16[1,256,128]{2,1,0} dynamic-slice(%big, %i, %z, %z), dynamic_slice_sizes={1,256,128}
  ROOT %m = bf16[1,256,128]{2,1,0} multiply(%ds, %w)
})");
  compiler::FusionGroup group;
  group.members = {m.entry().find("z"), m.entry().find("ds"), m.entry().find("m")};
  const hw::OpQuery q = fusion_query(m.entry(), group);
  // Read: the window 1x256x128 bf16 = 65536 B (not big's 32x that), w 65536 B,
  // the index i 4 B. Written: m, 65536 B.
  EXPECT_DOUBLE_EQ(q.hbm_bytes_read, 65536.0 + 65536.0 + 4.0);
  EXPECT_DOUBLE_EQ(q.hbm_bytes_written, 65536.0);
  // tpuv3: HBM 196612 B / 450 GB/s = 0.437 us beats the VPU (32768
  // elements = 32 vregs = 32 cycles at 940 MHz = 0.034 us); plus the HBM
  // latency 0.5 us and the op overhead 0.5 us.
  const hw::System system = make_system({2});
  OpCostModel costs(system.core());
  const OpCost cost = costs.fusion(m.entry(), group);
  EXPECT_NEAR(cost.seconds, 196612.0 / 450e9 + 0.5e-6 + 0.5e-6, 1e-15);
  EXPECT_EQ(cost.bound, hw::Bound::kHbm);
}

TEST(OpCost, SliceWindowsAreCappedAtTheWholeInputAndWholeReadsWin) {
  const auto m = compiler::parse_hlo(R"(HloModule sl
ENTRY %main (a: f32[4,256]) -> f32[4,256] {
  %a = f32[4,256]{1,0} parameter(0)
  %lo = f32[4,192]{1,0} slice(%a), slice={[0:4], [0:192]}
  %hi = f32[4,192]{1,0} slice(%a), slice={[0:4], [64:256]}
  %s = f32[4,192]{1,0} add(%lo, %hi)
  %n = f32[4,256]{1,0} negate(%a)
  ROOT %c = f32[4,256]{1,0} add(%n, %n)
})");
  const auto& e = m.entry();
  compiler::FusionGroup overlapping;
  overlapping.members = {e.find("lo"), e.find("hi"), e.find("s")};
  // Two windows of 4x192 f32 = 3072 B each; together 6144 B > a's 4096 B,
  // so the read is capped at the whole input once.
  EXPECT_DOUBLE_EQ(fusion_query(e, overlapping).hbm_bytes_read, 4096.0);
  compiler::FusionGroup one_window;
  one_window.members = {e.find("lo"), e.find("s")};
  // lo's window (3072 B) + hi read whole (an external input, 3072 B).
  EXPECT_DOUBLE_EQ(fusion_query(e, one_window).hbm_bytes_read, 3072.0 + 3072.0);
  compiler::FusionGroup whole;
  whole.members = {e.find("n"), e.find("c")};
  EXPECT_DOUBLE_EQ(fusion_query(e, whole).hbm_bytes_read, 4096.0);
}

TEST(OpCost, InPlaceDynamicUpdateSliceRootWritesOnlyItsUpdate) {
  const auto m = compiler::parse_hlo(R"(HloModule dus
ENTRY %main (buf: bf16[8,256,512], x: bf16[1,256,128], y: bf16[128,512], i: s32[]) -> bf16[8,256,512] {
  %buf = bf16[8,256,512]{2,1,0} parameter(0)
  %x = bf16[1,256,128]{2,1,0} parameter(1)
  %y = bf16[128,512]{1,0} parameter(2)
  %i = s32[] parameter(3)
  %z = s32[] constant(0)
  %d = bf16[1,256,512]{2,1,0} dot(%x, %y), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  ROOT %u = bf16[8,256,512]{2,1,0} dynamic-update-slice(%buf, %d, %i, %z, %z)
})");
  compiler::FusionGroup group;
  group.members = {m.entry().find("z"), m.entry().find("d"), m.entry().find("u")};
  const hw::OpQuery q = fusion_query(m.entry(), group);
  // buf is updated in place: not read, and only the update d (1x256x512
  // bf16 = 262144 B) is written. Read: x 65536 B + y 131072 B + i 4 B.
  EXPECT_DOUBLE_EQ(q.hbm_bytes_read, 65536.0 + 131072.0 + 4.0);
  EXPECT_DOUBLE_EQ(q.hbm_bytes_written, 262144.0);
  // tpuv3 MXU (systolic_core.cc): m=256, k=128, n=512 on 2 MXUs of 128x128.
  // rhs stationary: 1*1*4 = 4 tiles, 2 per MXU, each streams 256 rows:
  // 2*256 + 128 (first weight load) + 256 (fill/drain) = 896 cycles (lhs
  // stationary: 2 tiles, 1 per MXU, 512 rows: also 896), fed on the preset's
  // core.mxu_sustained_fraction 0.92 of the cycles: 896 / 0.92 / 940 MHz =
  // 1.036 us, the bound (HBM: 458756 B / 450 GB/s = 1.019 us); + 0.5 us
  // latency + 0.5 us overhead.
  const hw::System system = make_system({2});
  OpCostModel costs(system.core());
  const OpCost cost = costs.fusion(m.entry(), group);
  EXPECT_NEAR(cost.seconds, 896.0 / 0.92 / 940e6 + 0.5e-6 + 0.5e-6, 1e-15);
  EXPECT_EQ(cost.bound, hw::Bound::kMxu);
  EXPECT_DOUBLE_EQ(cost.flops, 2.0 * 256 * 128 * 512);
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

namespace podsim::sim {
namespace {

// An XLA fusion instruction is one kernel: its fused computation's work,
// its operands read (a fused dynamic-slice reads only its window) and its
// result written. Built as a call, then made a fusion, so the test does not
// depend on the reader's fusion syntax.
TEST(OpCost, FusionInstructionIsOneKernelOfItsComputation) {
  compiler::Module m = compiler::parse_hlo(R"(HloModule fused
%fused (p0: f32[64,128], p1: f32[4096,128], i: s32[]) -> f32[64,128] {
  %p0 = f32[64,128]{1,0} parameter(0)
  %p1 = f32[4096,128]{1,0} parameter(1)
  %i = s32[] parameter(2)
  %zero = s32[] constant(0)
  %ds = f32[64,128]{1,0} dynamic-slice(%p1, %i, %zero), dynamic_slice_sizes={64,128}
  %e = f32[64,128]{1,0} exponential(%p0)
  ROOT %m = f32[64,128]{1,0} multiply(%e, %ds)
}
ENTRY %main (a: f32[64,128], b: f32[4096,128], i: s32[]) -> f32[64,128] {
  %a = f32[64,128]{1,0} parameter(0)
  %b = f32[4096,128]{1,0} parameter(1)
  %i = s32[] parameter(2)
  ROOT %f = f32[64,128]{1,0} call(%a, %b, %i), to_apply=%fused
})");
  compiler::Instruction& f = m.mutable_entry().mutable_instr(m.entry().find("f"));
  f.opcode = compiler::Opcode::kFusion;
  f.attrs.fusion_kind = "kLoop";
  EXPECT_EQ(classify(f), OpClass::kCompute);
  const hw::OpQuery q = op_query(&m, m.entry(), f);
  // Work: exp and multiply over 64 x 128 elements; the dynamic-slice is a window read.
  ASSERT_EQ(q.vector_work.size(), 2u);
  EXPECT_EQ(q.vector_work[0].elements, 64 * 128);
  EXPECT_EQ(q.vector_work[0].cost_class, hw::VectorCostClass::kTranscendental);
  // Read: a whole (32 KiB), the 64-row window of b (32 KiB, not 2 MiB), i (4 B); written: 32 KiB.
  EXPECT_DOUBLE_EQ(q.hbm_bytes_read, 64 * 128 * 4 + 64 * 128 * 4 + 4);
  EXPECT_DOUBLE_EQ(q.hbm_bytes_written, 64 * 128 * 4);
  // Without the module the fusion's computation is unknown: bytes only.
  EXPECT_TRUE(op_query(m.entry(), f).vector_work.empty());
}

// The done half of an async pair and a bitcast are free; a start of a
// collective is the collective.
TEST(OpCost, AsyncPairsAndBitcastsClassify) {
  compiler::Instruction i;
  i.opcode = compiler::Opcode::kAllGatherStart;
  EXPECT_EQ(classify(i), OpClass::kCollective);
  i.opcode = compiler::Opcode::kAllGatherDone;
  EXPECT_EQ(classify(i), OpClass::kFree);
  i.opcode = compiler::Opcode::kBitcast;
  EXPECT_EQ(classify(i), OpClass::kFree);
  i.opcode = compiler::Opcode::kAsyncStart;
  i.attrs.async_wrapped = compiler::Opcode::kReduceScatter;
  EXPECT_EQ(classify(i), OpClass::kCollective);
  i.attrs.async_wrapped = compiler::Opcode::kCall;
  EXPECT_EQ(classify(i), OpClass::kCompute);
  i.opcode = compiler::Opcode::kConditional;
  EXPECT_EQ(classify(i), OpClass::kControl);
}

// Host I/O crosses the host link: a 4 MiB infeed (f32[1024,1024]) and a
// 4 MiB host recv take 4194304 B / 1e9 B/s each; a device-to-device send is
// not modelled (free), nor is the done half of a pair.
TEST(OpCost, InfeedAndHostTransfersCrossTheHostLink) {
  const compiler::Module m = compiler::parse_hlo(R"(HloModule io
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %tok = token[] after-all()
  %in = (f32[1024,1024]{1,0}, token[]) infeed(%tok)
  %recv = (f32[1024,1024]{1,0}, u32[], token[]) recv(%tok), channel_id=1, is_host_transfer=true
  %recv_done = (f32[1024,1024]{1,0}, token[]) recv-done(%recv), channel_id=1, is_host_transfer=true
  %send = (f32[4]{0}, u32[], token[]) send(%x, %tok), channel_id=2
  ROOT %y = f32[4]{0} negate(%x)
})");
  EXPECT_DOUBLE_EQ(host_transfer_bytes(m.entry(), find(m, "in")), 4194304.0);
  EXPECT_DOUBLE_EQ(host_transfer_bytes(m.entry(), find(m, "recv")), 4194304.0);
  EXPECT_DOUBLE_EQ(host_transfer_bytes(m.entry(), find(m, "send")), 0.0);
  EXPECT_EQ(classify(find(m, "send")), OpClass::kFree);
  EXPECT_EQ(classify(find(m, "recv_done")), OpClass::kFree);
  const hw::System system = make_system({1});
  OpCostModel costs(system.core(), &m, 1e9);
  for (const char* name : {"in", "recv"}) {
    const OpCost c = costs.instruction(m.entry(), find(m, name));
    EXPECT_GE(c.seconds, 4194304.0 / 1e9) << name;
    EXPECT_LT(c.seconds, 4194304.0 / 1e9 + 1e-5) << name;  // plus at most the op's fixed costs
  }
}

}  // namespace
}  // namespace podsim::sim
