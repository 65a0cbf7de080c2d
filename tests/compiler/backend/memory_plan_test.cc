// plan_memory on hand graphs; every byte count derived in the comments.
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/backend/fusion.h"
#include "compiler/backend/memory_plan.h"
#include "tests/compiler/backend/test_util.h"

namespace podsim::compiler {
namespace {

using pipeline_test::id_of;

MemoryPlan plan_in_id_order(const Module& m, MemoryPlanOptions options = {},
                            std::vector<FusionPlan> fusion = {}) {
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
  // Live throughout: params w 64 + x 32, root outputs t 32 + nw 64 = 192.
  // On top of that at each position:
  //   2 h:  h 32                 = 224
  //   3 t:  h 32 (t counted)     = 224
  //   4 gt: h + gt               = 256 (h's last read)
  //   5 gw: gt 32 + gw 64        = 288  <- peak
  //   6 nw: gw 64                = 256
  // At gw: param 64, input 32, activation t 32 (fwd/, live into the
  // backward pass), temporaries gt 32 (bwd/ read by bwd/) + nw 64 (opt/,
  // reserved as an output), gradient gw 64 (bwd/ feeding opt/).
  MemoryPlan plan = plan_in_id_order(m);
  EXPECT_EQ(plan.peak_bytes, 288);
  EXPECT_EQ(plan.peak_at, id_of(m.entry(), "gw"));
  EXPECT_EQ(role_bytes(plan, ValueRole::kParameter), 64);
  EXPECT_EQ(role_bytes(plan, ValueRole::kInput), 32);
  EXPECT_EQ(role_bytes(plan, ValueRole::kGradient), 64);
  EXPECT_EQ(role_bytes(plan, ValueRole::kActivation), 32);
  EXPECT_EQ(role_bytes(plan, ValueRole::kTemporary), 96);
  EXPECT_EQ(plan.at_peak.total(), plan.peak_bytes);
}

TEST(MemoryPlan, DonatedParameterTakesTheNewWeight) {
  Module m = parse_hlo(kTrainingLike);
  // Root element 1 (nw) is written into w's buffer and adds 0 B: the
  // baseline is 128 and the peak 128 + gt 32 + gw 64 = 224 at gw: param 64,
  // input 32, activation t 32, temporary gt 32, gradient 64.
  MemoryPlan plan = plan_in_id_order(m, MemoryPlanOptions{.outputs_alias_parameters = true});
  EXPECT_EQ(plan.peak_bytes, 224);
  EXPECT_EQ(plan.peak_at, id_of(m.entry(), "gw"));
  EXPECT_EQ(role_bytes(plan, ValueRole::kTemporary), 32);
  EXPECT_EQ(role_bytes(plan, ValueRole::kGradient), 64);
  EXPECT_EQ(role_bytes(plan, ValueRole::kActivation), 32);
  EXPECT_EQ(plan.at_peak.total(), 224);
}

TEST(MemoryPlan, FusedIntermediatesTakeNoMemory) {
  // p f32[256] = 1024 B and the output n (1024 B) are live throughout.
  // Unfused: at e, p + n + e = 3072 B. Fused {e, n}: e is never written,
  // so the peak is p + n = 2048 B.
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
  // p 1024 B and the output s (64 B) are live throughout. At ar:
  // p + ar 1024 + s = 2112 B, the all-reduce's output counted as a
  // collective buffer. At s the total is the same (not a new peak), and ar
  // would be an ordinary temporary there (its collective is over).
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
  EXPECT_EQ(plan.peak_bytes, 2112);
  EXPECT_EQ(plan.peak_at, id_of(m.entry(), "ar"));
  EXPECT_EQ(role_bytes(plan, ValueRole::kCollectiveBuffer), 1024);
  EXPECT_EQ(role_bytes(plan, ValueRole::kParameter), 1024);
  EXPECT_EQ(role_bytes(plan, ValueRole::kTemporary), 64);
}

TEST(MemoryPlan, WhileAddsTheBodyPeak) {
  // tests/fixtures/hlo/while_loop.hlo. Body (ids = positions):
  //   one 4 B [2,3], next 4 B [3,8] (root), two 4 B [5,7], acc.next 32 B
  //   [7,8] (root); twos = broadcast(two) is an expansion (4 B of input for
  //   32 B): no buffer, acc.next reads two. At 7: 4 + 4 + 32 = 40.
  // Condition: limit 4 B + lt 1 B = 5 < 40.
  // Entry: zero 4 B [0,3] (read by the while), x 32 B throughout; the loop
  // state aliases zero and x. At the while: 36 + 40 = 76 B.
  Module m = parse_hlo_file(std::string(PODSIM_SOURCE_DIR) + "/tests/fixtures/hlo/while_loop.hlo");
  MemoryPlan plan = plan_in_id_order(m);
  EXPECT_EQ(plan.peak_bytes, 76);
  EXPECT_EQ(plan.peak_at, id_of(m.entry(), "loop"));
  EXPECT_EQ(role_bytes(plan, ValueRole::kParameter), 32);
  EXPECT_EQ(role_bytes(plan, ValueRole::kTemporary), 44);
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
  // Positions: p0 a1 b2 t3 g4 c5 s6 n7. b: [2,2]. a: [1,7]. c: [5,6];
  // p and the output n (1024 B each) throughout.
  //   2: p + n + a + b = 4096 (b dies here: nothing reads it)
  //   5: p + n + a + c 2048 = 5120
  //   6: p + n + a + c + s = 6144 <- peak
  MemoryPlan plan = plan_in_id_order(m);
  EXPECT_EQ(plan.peak_bytes, 6144);
  EXPECT_EQ(plan.peak_at, id_of(m.entry(), "s"));
}

// An embedding as one-hot(tokens) . table, the one-hot read by two dots (the
// forward lookup e and the table's gradient g), as a training step has it.
// Sizes: tok s32[4,8] 128 B, table f32[64,16] 4096 B, y f32[4,8,16] 2048 B;
// io/bt s32[4,8,64] 8192 B each, eq pred[4,8,64] 2048 B, oh f32[4,8,64]
// 8192 B; outputs e 2048 B, g 4096 B.
constexpr const char* kOneHotEmbedding = R"(HloModule m
ENTRY %e (tok: s32[4,8], table: f32[64,16], y: f32[4,8,16]) -> (f32[4,8,16], f32[64,16]) {
  %tok = s32[4,8] parameter(0), metadata={op_name="input/tok"}
  %table = f32[64,16] parameter(1), metadata={op_name="param/table"}
  %y = f32[4,8,16] parameter(2), metadata={op_name="input/y"}
  %io = s32[4,8,64] iota(), iota_dimension=2
  %bt = s32[4,8,64] broadcast(%tok), dimensions={0,1}
  %eq = pred[4,8,64] compare(%io, %bt), direction=EQ
  %oh = f32[4,8,64] convert(%eq)
  %e = f32[4,8,16] dot(%oh, %table), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  %g = f32[64,16] dot(%oh, %y), lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}
  ROOT %r = (f32[4,8,16], f32[64,16]) tuple(%e, %g)
})";

TEST(MemoryPlan, OneHotMaskIsRecomputedInItsConsumers) {
  Module m = parse_hlo(kOneHotEmbedding);
  // io, bt, eq, oh are expansions: their inputs (tok, 128 B, read through
  // bt; io reads nothing) are far below 1/8 of each. No buffer for any of
  // them; e and g read tok and table. Live throughout: params 128 + 4096 +
  // 2048 and outputs 2048 + 4096 = 12416 B, and nothing else is ever live.
  // (Were they written: at eq io + bt + eq = 18432 B more.)
  MemoryPlan plan = plan_in_id_order(m);
  EXPECT_EQ(plan.peak_bytes, 12416);
  // Fused as plan_fusion groups them (oh has two readers, so it is a
  // kernel of its own): the same.
  std::vector<FusionPlan> fusion{plan_fusion(m.entry())};
  EXPECT_EQ(plan_in_id_order(m, {}, fusion).peak_bytes, 12416);
}

TEST(MemoryPlan, MaskOfFullSizeInputsIsWritten) {
  // The same mask from a full-size s32[4,8,64] index tensor (8192 B, not
  // below 1/8 of oh): bt is gone (ix is compared directly), io still an
  // expansion but eq (8192 B of inputs for 2048 B) and oh are written.
  // Base: params ix 8192 + table 4096 + y 2048, outputs 6144 = 20480 B.
  // Ids: ix0 table1 y2 io3 eq4 oh5 e6 g7. eq [4,5], oh [5,7]: at oh
  // eq + oh = 10240 -> 30720 B.
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (ix: s32[4,8,64], table: f32[64,16], y: f32[4,8,16]) -> (f32[4,8,16], f32[64,16]) {
  %ix = s32[4,8,64] parameter(0), metadata={op_name="input/ix"}
  %table = f32[64,16] parameter(1), metadata={op_name="param/table"}
  %y = f32[4,8,16] parameter(2), metadata={op_name="input/y"}
  %io = s32[4,8,64] iota(), iota_dimension=2
  %eq = pred[4,8,64] compare(%io, %ix), direction=EQ
  %oh = f32[4,8,64] convert(%eq)
  %e = f32[4,8,16] dot(%oh, %table), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  %g = f32[64,16] dot(%oh, %y), lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}
  ROOT %r = (f32[4,8,16], f32[64,16]) tuple(%e, %g)
})");
  MemoryPlan plan = plan_in_id_order(m);
  EXPECT_EQ(plan.peak_bytes, 30720);
  EXPECT_EQ(plan.peak_at, id_of(m.entry(), "oh"));
}

TEST(MemoryPlan, LiveBuffersAtPeakSumToThePeak) {
  Module m = parse_hlo(kTrainingLike);
  // At gw (HandComputedPeakAndBreakdown): w 64, x 32, t 32, gt 32, gw 64,
  // nw 64: largest first, ties by producer id (w0 gw5 nw6, then x1 t3 gt4).
  std::vector<std::vector<InstrId>> no_schedule;
  std::vector<FusionPlan> no_fusion;
  std::vector<LiveBufferAtPeak> live =
      live_buffers_at_peak(MemoryPlanInput{m, no_schedule, no_fusion, {}});
  ASSERT_EQ(live.size(), 6u);
  std::vector<std::string> names;
  int64_t sum = 0;
  for (const LiveBufferAtPeak& b : live) {
    names.push_back(b.instruction);
    sum += b.bytes;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"w", "gw", "nw", "x", "t", "gt"}));
  EXPECT_EQ(sum, 288);
  EXPECT_EQ(live[1].op_name, "bwd/gw");
  EXPECT_EQ(live[1].role, ValueRole::kGradient);
  EXPECT_EQ(live[1].shape, "f32[4,4]");
}

// The positions of HandComputedPeakAndBreakdown: 192 192 224 224 256 288
// 256 192 (at the root tuple gw's last read, nw, is past); the maximum is
// the peak, first at gw's position.
TEST(MemoryPlan, LiveBytesByPositionIsTheSweepWhosePeakIsThePlans) {
  Module m = parse_hlo(kTrainingLike);
  std::vector<std::vector<InstrId>> no_schedule;
  std::vector<FusionPlan> no_fusion;
  const MemoryPlanInput input{m, no_schedule, no_fusion, {}};
  const std::vector<int64_t> live = live_bytes_by_position(input);
  EXPECT_EQ(live, (std::vector<int64_t>{192, 192, 224, 224, 256, 288, 256, 192}));
  const MemoryPlan plan = plan_memory(input);
  EXPECT_EQ(*std::max_element(live.begin(), live.end()), plan.peak_bytes);
  EXPECT_EQ(std::max_element(live.begin(), live.end()) - live.begin(), plan.peak_at);
  EXPECT_FALSE(plan.outputs_alias_parameters);
  EXPECT_TRUE(plan_in_id_order(m, MemoryPlanOptions{.outputs_alias_parameters = true})
                  .outputs_alias_parameters);
}

// A while adds its body's peak at its position (WhileAddsTheBodyPeak): 76 B
// there, the maximum of the series.
TEST(MemoryPlan, LiveBytesByPositionAddsTheLoopBodysPeakAtTheLoop) {
  Module m = parse_hlo_file(std::string(PODSIM_SOURCE_DIR) + "/tests/fixtures/hlo/while_loop.hlo");
  std::vector<std::vector<InstrId>> no_schedule;
  std::vector<FusionPlan> no_fusion;
  const std::vector<int64_t> live =
      live_bytes_by_position(MemoryPlanInput{m, no_schedule, no_fusion, {}});
  ASSERT_EQ(live.size(), static_cast<size_t>(m.entry().size()));
  EXPECT_EQ(live[static_cast<size_t>(id_of(m.entry(), "loop"))], 76);
  EXPECT_EQ(*std::max_element(live.begin(), live.end()), 76);
}

// A live buffer carries its producer's sharding attribute (a parameter of a
// partitioned program keeps its own), "" without one.
TEST(MemoryPlan, LiveBufferAtPeakCarriesItsProducersSharding) {
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (w: f32[4,4]) -> f32[4,4] {
  %w = f32[4,4] parameter(0), sharding={devices=[2,1]0,1}
  ROOT %n = f32[4,4] negate(%w)
})");
  std::vector<std::vector<InstrId>> no_schedule;
  std::vector<FusionPlan> no_fusion;
  const std::vector<LiveBufferAtPeak> live =
      live_buffers_at_peak(MemoryPlanInput{m, no_schedule, no_fusion, {}});
  ASSERT_EQ(live.size(), 2u);  // w and n, 64 B each, ties by producer
  EXPECT_EQ(live[0].instruction, "w");
  EXPECT_EQ(live[0].sharding, "{devices=[2,1]0,1}");
  EXPECT_EQ(live[1].sharding, "");
}

// The decoder's one-hot is built from shifted tokens: concatenate(a padding
// column broadcast from a constant, tok). Fused into oh's kernel (oh has
// two readers, so it is a kernel of its own), the constant is a member that
// the chain reads (4 B), not an uncheap op: oh is still an expansion, read
// through to tok. Params tok 112 + table 4096 + y 2048 and outputs
// 2048 + 4096 = 12400 B; nothing else is ever live.
TEST(MemoryPlan, FusedShiftedTokenOneHotIsAnExpansion) {
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (tok: s32[4,7], table: f32[64,16], y: f32[4,8,16]) -> (f32[4,8,16], f32[64,16]) {
  %tok = s32[4,7] parameter(0), metadata={op_name="input/tok"}
  %table = f32[64,16] parameter(1), metadata={op_name="param/table"}
  %y = f32[4,8,16] parameter(2), metadata={op_name="input/y"}
  %zero = s32[] constant(0)
  %pad = s32[4,1] broadcast(%zero), dimensions={}
  %sh = s32[4,8] concatenate(%pad, %tok), dimensions={1}
  %io = s32[4,8,64] iota(), iota_dimension=2
  %bt = s32[4,8,64] broadcast(%sh), dimensions={0,1}
  %eq = pred[4,8,64] compare(%io, %bt), direction=EQ
  %oh = f32[4,8,64] convert(%eq)
  %e = f32[4,8,16] dot(%oh, %table), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  %g = f32[64,16] dot(%oh, %y), lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}
  ROOT %r = (f32[4,8,16], f32[64,16]) tuple(%e, %g)
})");
  std::vector<FusionPlan> fusion{plan_fusion(m.entry())};
  const auto& group_of = fusion[0].group_of;
  ASSERT_GE(group_of[static_cast<size_t>(id_of(m.entry(), "oh"))], 0);
  ASSERT_EQ(group_of[static_cast<size_t>(id_of(m.entry(), "zero"))],
            group_of[static_cast<size_t>(id_of(m.entry(), "oh"))]);
  EXPECT_EQ(plan_in_id_order(m, {}, fusion).peak_bytes, 12400);
}

// b is written by exponential and then updated by d in place: d takes b's
// buffer. Live throughout: p 1024, u 64, i 4 and the output n 1024 = 2116 B.
// Ids p0 u1 i2 b3 d4 n5. In place: b/d [3,5]: 1024 -> 3140 B; were d a
// buffer of its own, at d b + d = 2048 -> 4164 B.
TEST(MemoryPlan, DynamicUpdateSliceWritesInPlace) {
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (p: f32[256], u: f32[16], i: s32[]) -> f32[256] {
  %p = f32[256] parameter(0)
  %u = f32[16] parameter(1)
  %i = s32[] parameter(2)
  %b = f32[256] exponential(%p)
  %d = f32[256] dynamic-update-slice(%b, %u, %i)
  ROOT %n = f32[256] negate(%d)
})");
  EXPECT_EQ(plan_in_id_order(m).peak_bytes, 3140);
  // b also read after d (n = add(d, b)): no in-place update. b [3,5],
  // d [4,5]: at d 2048 -> 4164 B.
  Module copy = parse_hlo(R"(HloModule m
ENTRY %e (p: f32[256], u: f32[16], i: s32[]) -> f32[256] {
  %p = f32[256] parameter(0)
  %u = f32[16] parameter(1)
  %i = s32[] parameter(2)
  %b = f32[256] exponential(%p)
  %d = f32[256] dynamic-update-slice(%b, %u, %i)
  ROOT %n = f32[256] add(%d, %b)
})");
  EXPECT_EQ(plan_in_id_order(copy).peak_bytes, 4164);
  // An entry parameter is never overwritten: d into p is a new buffer.
  // Live throughout p, u, i, n = 2116; at d: d 1024 -> 3140 B.
  Module param = parse_hlo(R"(HloModule m
ENTRY %e (p: f32[256], u: f32[16], i: s32[]) -> f32[256] {
  %p = f32[256] parameter(0)
  %u = f32[16] parameter(1)
  %i = s32[] parameter(2)
  %d = f32[256] dynamic-update-slice(%p, %u, %i)
  ROOT %n = f32[256] negate(%d)
})");
  EXPECT_EQ(plan_in_id_order(param).peak_bytes, 3140);
}

TEST(MemoryPlan, ReadModifyWriteOfASliceIsInPlace) {
  // d = dynamic-update-slice(b, dynamic-slice(b, i) + u, i): the slice is
  // read (s) before d writes, so d takes b's buffer. Positions p0 u1 i2 b3
  // s4 a5 d6 n7; p, u, i and the result n live throughout: 1024 + 64 + 4 +
  // 1024 = 2116. b/d [3,7] 1024, s [4,5] 64, a [5,6] 64: at a 2116 + 1024 +
  // 128 = 3268. A new d buffer would add 1024 at d: 2116 + 1024 + 1024 + 64
  // (a) = 4228.
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (p: f32[256], u: f32[16], i: s32[]) -> f32[256] {
  %p = f32[256] parameter(0)
  %u = f32[16] parameter(1)
  %i = s32[] parameter(2)
  %b = f32[256] exponential(%p)
  %s = f32[16] dynamic-slice(%b, %i), dynamic_slice_sizes={16}
  %a = f32[16] add(%s, %u)
  %d = f32[256] dynamic-update-slice(%b, %a, %i)
  ROOT %n = f32[256] negate(%d)
})");
  EXPECT_EQ(plan_in_id_order(m).peak_bytes, 3268);
}

}  // namespace
}  // namespace podsim::compiler
