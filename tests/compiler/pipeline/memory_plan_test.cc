// plan_memory on hand graphs; every byte count derived in the comments.
#include <gtest/gtest.h>

#include "compiler/pipeline/fusion.h"
#include "compiler/pipeline/memory_plan.h"
#include "tests/compiler/pipeline/test_util.h"

namespace podsim::compiler {
namespace {

using pipeline_test::id_of;

MemoryPlan plan_in_id_order(const Module& m, MemoryPlanOptions options = {}, std::vector<FusionPlan> fusion = {}) {
  std::vector<std::vector<InstrId>> no_schedule;  // id order
  return plan_memory(MemoryPlanInput{m, no_schedule, fusion, options});
}

int64_t role_bytes(const MemoryPlan& plan, ValueRole role) {
  auto it = plan.at_peak.bytes.find(role);
  return it == plan.at_peak.bytes.end() ? 0 : it->second;
}

// A tiny training step: h = x w, t = tanh h (forward), gt = t * h and
// gw = x^T gt (backward), nw = w - gw (optimizer). Sizes: w f32[4,4] = 64 B,
// every [2,4] value 32 B, gw and nw 64 B. Positions = ids 0..7.
constexpr const char* kTrainingLike = R"(HloModule m
ENTRY %e (w: f32[4,4], x: f32[2,4]) -> (f32[2,4], f32[4,4]) {
  %w = f32[4,4] parameter(0), metadata={op_name="param/w"}
  %x = f32[2,4] parameter(1), metadata={op_name="input/x"}
  %h = f32[2,4] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="fwd/h"}
  %t = f32[2,4] tanh(%h), metadata={op_name="fwd/t"}
  %gt = f32[2,4] multiply(%t, %h), metadata={op_name="bwd/gt"}
  %gw = f32[4,4] dot(%x, %gt), lhs_contracting_dims={0}, rhs_contracting_dims={0}, metadata={op_name="bwd/gw"}
  %nw = f32[4,4] subtract(%w, %gw), metadata={op_name="opt/w"}
  ROOT %r = (f32[2,4], f32[4,4]) tuple(%t, %nw)
})";

TEST(MemoryPlan, HandComputedPeakAndBreakdown) {
  Module m = parse_hlo(kTrainingLike);
  // Live bytes per position (params w 64 + x 32 = 96 always):
  //   2 h:  96 + h 32                      = 128
  //   3 t:  96 + h + t                     = 160
  //   4 gt: 96 + h + t + gt                = 192 (h, t read here; t is a root output, lives on)
  //   5 gw: 96 + t + gt + gw 64            = 224
  //   6 nw: 96 + t + gw + nw 64            = 256  <- peak
  //   7 r:  96 + t + nw                    = 192
  // At nw: param 64, input 32, gradient gw 64 (bwd/ feeding opt/),
  // activation t 32 (fwd/, live into the backward pass), temporary nw 64.
  MemoryPlan plan = plan_in_id_order(m);
  EXPECT_EQ(plan.peak_bytes, 256);
  EXPECT_EQ(plan.peak_at, id_of(m.entry(), "nw"));
  EXPECT_EQ(role_bytes(plan, ValueRole::kParameter), 64);
  EXPECT_EQ(role_bytes(plan, ValueRole::kInput), 32);
  EXPECT_EQ(role_bytes(plan, ValueRole::kGradient), 64);
  EXPECT_EQ(role_bytes(plan, ValueRole::kActivation), 32);
  EXPECT_EQ(role_bytes(plan, ValueRole::kTemporary), 64);
  EXPECT_EQ(plan.at_peak.total(), plan.peak_bytes);
}

TEST(MemoryPlan, DonatedParameterTakesTheNewWeight) {
  Module m = parse_hlo(kTrainingLike);
  // Root element 1 (nw) is written into w's buffer: nw adds 0 B, so
  // position 6 drops to 192 and the peak is 224 at gw: param 64, input 32,
  // activation t 32, temporary gt 32 (bwd/ read by bwd/ only), gradient 64.
  MemoryPlan plan = plan_in_id_order(m, MemoryPlanOptions{.outputs_alias_parameters = true});
  EXPECT_EQ(plan.peak_bytes, 224);
  EXPECT_EQ(plan.peak_at, id_of(m.entry(), "gw"));
  EXPECT_EQ(role_bytes(plan, ValueRole::kTemporary), 32);
  EXPECT_EQ(role_bytes(plan, ValueRole::kGradient), 64);
  EXPECT_EQ(role_bytes(plan, ValueRole::kActivation), 32);
  EXPECT_EQ(plan.at_peak.total(), 224);
}

TEST(MemoryPlan, FusedIntermediatesTakeNoMemory) {
  // p f32[256] = 1024 B. Unfused: at n, p + e + n = 3072 B. Fused {e, n}:
  // e is never written, so the peak is p + n = 2048 B.
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (p: f32[256]) -> f32[256] {
  %p = f32[256] parameter(0)
  %e = f32[256] exponential(%p)
  ROOT %n = f32[256] negate(%e)
})");
  EXPECT_EQ(plan_in_id_order(m).peak_bytes, 3072);
  std::vector<FusionPlan> fusion{plan_fusion(m.entry())};
  ASSERT_EQ(fusion[0].groups.size(), 1u);
  EXPECT_EQ(plan_in_id_order(m, {}, fusion).peak_bytes, 2048);
}

TEST(MemoryPlan, CollectiveResultIsACollectiveBufferWhileItRuns) {
  // p 1024 B; ar (1024 B) peaks at its own position with p: 2048 B, the
  // all-reduce's output counted as a collective buffer.
  Module m = parse_hlo(R"(HloModule m
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %e (p: f32[256]) -> f32[16] {
  %p = f32[256] parameter(0)
  %ar = f32[256] all-reduce(%p), replica_groups={}, to_apply=%sum
  ROOT %s = f32[16] slice(%ar), slice={[0:16]}
})");
  MemoryPlan plan = plan_in_id_order(m);
  // At s: p 1024 + ar 1024 + s 64 = 2112 is the true peak; ar is then an
  // ordinary temporary (its collective is over).
  EXPECT_EQ(plan.peak_bytes, 2112);
  EXPECT_EQ(role_bytes(plan, ValueRole::kTemporary), 1088);
  EXPECT_EQ(role_bytes(plan, ValueRole::kCollectiveBuffer), 0);
  // Without the slice's own buffer the peak is at the all-reduce.
  Module m2 = parse_hlo(R"(HloModule m
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %e (p: f32[256]) -> f32[256] {
  %p = f32[256] parameter(0)
  ROOT %ar = f32[256] all-reduce(%p), replica_groups={}, to_apply=%sum
})");
  MemoryPlan plan2 = plan_in_id_order(m2);
  EXPECT_EQ(plan2.peak_bytes, 2048);
  EXPECT_EQ(role_bytes(plan2, ValueRole::kCollectiveBuffer), 1024);
  EXPECT_EQ(role_bytes(plan2, ValueRole::kParameter), 1024);
}

TEST(MemoryPlan, WhileAddsTheBodyPeak) {
  // tests/fixtures/hlo/while_loop.hlo. Body (ids = positions):
  //   one 4 B [2,3], next 4 B [3,8] (root), two 4 B [5,6], twos 32 B [6,7],
  //   acc.next 32 B [7,8] (root); at 7: next 4 + twos 32 + acc.next 32 = 68.
  // Condition: limit 4 B + lt 1 B = 5 < 68.
  // Entry: zero 4 B [0,3] (read by the while), x 32 B throughout; the loop
  // state aliases zero and x. At the while: 36 + 68 = 104 B.
  Module m = parse_hlo_file(std::string(PODSIM_SOURCE_DIR) + "/tests/fixtures/hlo/while_loop.hlo");
  MemoryPlan plan = plan_in_id_order(m);
  EXPECT_EQ(plan.peak_bytes, 104);
  EXPECT_EQ(plan.peak_at, id_of(m.entry(), "loop"));
  EXPECT_EQ(role_bytes(plan, ValueRole::kParameter), 32);
  EXPECT_EQ(role_bytes(plan, ValueRole::kTemporary), 72);
}

TEST(MemoryPlan, GetTupleElementKeepsOnlyItsElementAlive) {
  // t = tuple(a, b), a and b 1024 B each; only element 0 is read later
  // (through g), so b dies where it is defined while a lives to n.
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (p: f32[256]) -> f32[256] {
  %p = f32[256] parameter(0)
  %a = f32[256] exponential(%p)
  %b = f32[256] negate(%p)
  %t = (f32[256], f32[256]) tuple(%a, %b)
  %g = f32[256] get-tuple-element(%t), index=0
  %c = f32[512] concatenate(%p, %p), dimensions={0}
  %s = f32[256] slice(%c), slice={[0:256]}
  ROOT %n = f32[256] add(%g, %s)
})");
  // Positions: p0 a1 b2 t3 g4 c5 s6 n7. b: [2,2]. a: [1,7]. c: [5,6].
  //   5: p + a + c = 1024 + 1024 + 2048 = 4096
  //   6: p + a + c + s = 5120 <- peak
  //   7: p + a + s + n = 4096
  MemoryPlan plan = plan_in_id_order(m);
  EXPECT_EQ(plan.peak_bytes, 5120);
  EXPECT_EQ(plan.peak_at, id_of(m.entry(), "s"));
}

}  // namespace
}  // namespace podsim::compiler
