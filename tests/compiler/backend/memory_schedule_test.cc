// Memory-aware scheduling (schedule.h): tail units (only a short chain to
// the outputs depends on them) and units that free more than they allocate
// run as soon as their operands are ready (after a collective operand:
// collective_result_lag positions later); peaks of the resulting schedules by
// plan_memory, derived by hand. The graphs are tiny, so most tests set
// tail_size_limit = 0: tails are then the units only the root reads.
#include <gtest/gtest.h>

#include "compiler/backend/memory_plan.h"
#include "compiler/backend/schedule.h"
#include "tests/compiler/backend/test_util.h"

namespace podsim::compiler {
namespace {

using pipeline_test::expect_topological_permutation;
using pipeline_test::id_of;
using pipeline_test::names_in;
using Names = std::vector<std::string>;

MemoryPlan plan_with(const Module& m, const std::vector<InstrId>& order) {
  std::vector<std::vector<InstrId>> schedule(static_cast<size_t>(m.computation_count()));
  schedule[static_cast<size_t>(m.entry_id())] = order;
  std::vector<FusionPlan> no_fusion;
  return plan_memory(MemoryPlanInput{m, schedule, no_fusion, {}});
}

std::vector<InstrId> id_order(const Computation& c) {
  std::vector<InstrId> order;
  for (InstrId id = 0; id < c.size(); ++id) order.push_back(id);
  return order;
}

int64_t role_bytes(const MemoryPlan& plan, ValueRole role) {
  auto it = plan.at_peak.bytes.find(role);
  return it == plan.at_peak.bytes.end() ? 0 : it->second;
}

// A backward pass emitting two gradients (g1, then more work, then g2) and
// the optimizer updates after all of it, as the training step emits them.
// Every value is f32[256] = 1024 B.
constexpr const char* kTwoGradients = R"(HloModule m
ENTRY %e (w1: f32[256], w2: f32[256], x: f32[256]) -> (f32[256], f32[256], f32[256]) {
  %w1 = f32[256] parameter(0), metadata={op_name="param/w1"}
  %w2 = f32[256] parameter(1), metadata={op_name="param/w2"}
  %x = f32[256] parameter(2), metadata={op_name="input/x"}
  %g1 = f32[256] multiply(%x, %w1), metadata={op_name="bwd/g1"}
  %a = f32[256] exponential(%x), metadata={op_name="bwd/a"}
  %g2 = f32[256] multiply(%a, %w2), metadata={op_name="bwd/g2"}
  %b = f32[256] tanh(%a), metadata={op_name="bwd/b"}
  %n1 = f32[256] subtract(%w1, %g1), metadata={op_name="opt/w1"}
  %n2 = f32[256] subtract(%w2, %g2), metadata={op_name="opt/w2"}
  ROOT %r = (f32[256], f32[256], f32[256]) tuple(%b, %n1, %n2)
})";

constexpr ScheduleOptions kOnlyRootReadersAreTails{.tail_size_limit = 0};

TEST(MemorySchedule, OptimizerUpdateRunsRightAfterItsGradient) {
  Module m = parse_hlo(kTwoGradients);
  const Computation& c = m.entry();
  std::vector<InstrId> order = schedule_computation(c, FusionPlan{}, kOnlyRootReadersAreTails);
  expect_topological_permutation(c, order);
  // Tails: n1, n2, b (only the root reads them). n1 reads g1, which only
  // tails read: it runs right after g1 (key (3,1)); likewise n2 after g2.
  // b reads only a, which g2 (not a tail) reads too: running b early would
  // end no value's life, so it keeps its place.
  EXPECT_EQ(names_in(c, order), (Names{"w1", "w2", "x", "g1", "n1", "a", "g2", "n2", "b", "r"}));
  std::vector<InstrId> original =
      schedule_computation(c, FusionPlan{}, ScheduleOptions{.memory_aware = false});
  EXPECT_EQ(original, id_order(c));
}

TEST(MemorySchedule, GradientsNoLongerLiveTogether) {
  Module m = parse_hlo(kTwoGradients);
  const Computation& c = m.entry();
  // Live throughout: parameters w1, w2, x and the root's outputs b, n1, n2:
  // 6 x 1024 = 6144 B.
  // Id order (w1 w2 x g1 a g2 b n1 n2 r), on top of that:
  //   g1: g1 = 1024; a: g1 + a = 2048; g2: g1 + a + g2 = 3072 <- peak (first);
  //   b: the same (a's last read); n1: g1 + g2 = 2048; n2: g2.
  //   Peak 9216 B at g2 with gradients g1 + g2 = 2048 B.
  MemoryPlan before = plan_with(m, id_order(c));
  EXPECT_EQ(before.peak_bytes, 9216);
  EXPECT_EQ(before.peak_at, id_of(c, "g2"));
  EXPECT_EQ(role_bytes(before, ValueRole::kGradient), 2048);
  // Memory-aware (w1 w2 x g1 n1 a g2 n2 b r): g1: 1024; n1: 1024 (g1's last
  // read); a: 1024; g2: a + g2 = 2048 <- peak; n2: the same; b: a = 1024.
  //   Peak 8192 B at g2, one gradient (1024 B) live.
  MemoryPlan after = plan_with(m, schedule_computation(c, FusionPlan{}, kOnlyRootReadersAreTails));
  EXPECT_EQ(after.peak_bytes, 8192);
  EXPECT_EQ(after.peak_at, id_of(c, "g2"));
  EXPECT_EQ(role_bytes(after, ValueRole::kGradient), 1024);
}

// g1 is reduced over all devices (ar, standing for the gradient
// reduce-scatter); its update n1 may then wait for the collective while
// c1..c4 run.
constexpr const char* kReducedGradient = R"(HloModule m
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %e (w1: f32[256], x: f32[256]) -> (f32[256], f32[256]) {
  %w1 = f32[256] parameter(0), metadata={op_name="param/w1"}
  %x = f32[256] parameter(1), metadata={op_name="input/x"}
  %g1 = f32[256] multiply(%x, %w1), metadata={op_name="bwd/g1"}
  %ar = f32[256] all-reduce(%g1), replica_groups={}, to_apply=%sum, metadata={op_name="bwd/g1"}
  %c1 = f32[256] exponential(%x), metadata={op_name="bwd/c1"}
  %c2 = f32[256] negate(%c1), metadata={op_name="bwd/c2"}
  %c3 = f32[256] tanh(%c2), metadata={op_name="bwd/c3"}
  %c4 = f32[256] exponential(%c3), metadata={op_name="bwd/c4"}
  %n1 = f32[256] subtract(%w1, %ar), metadata={op_name="opt/w1"}
  ROOT %r = (f32[256], f32[256]) tuple(%c4, %n1)
})";

TEST(MemorySchedule, UpdateWaitsTheLagAfterTheCollective) {
  Module m = parse_hlo(kReducedGradient);
  const Computation& c = m.entry();
  // ar starts right after g1: key (2,1). n1 is a tail: key (2 + lag, 0) =
  // (4,0) with lag 2, which ties with c1 at place 4 and follows it
  // (position 4 < 8).
  std::vector<InstrId> lagged = schedule_computation(
      c, FusionPlan{}, ScheduleOptions{.collective_result_lag = 2, .tail_size_limit = 0});
  expect_topological_permutation(c, lagged);
  EXPECT_EQ(names_in(c, lagged), (Names{"w1", "x", "g1", "ar", "c1", "n1", "c2", "c3", "c4", "r"}));
  // Without memory awareness n1, as a collective's user, runs as late as
  // its user r allows.
  std::vector<InstrId> late =
      schedule_computation(c, FusionPlan{}, ScheduleOptions{.memory_aware = false});
  EXPECT_EQ(names_in(c, late), (Names{"w1", "x", "g1", "ar", "c1", "c2", "c3", "c4", "n1", "r"}));
  // Peaks: live throughout w1, x, c4, n1 = 4096 B. Lagged: g1 [2,3], ar
  // [3,5], c1 [4,6], c2 [6,7], c3 [7,8]: at most two at once (5: ar + c1):
  // 6144 B. Late: ar lives [3,8] beside the c-chain: at c1..c4 three
  // (ar, and two of the chain): 7168 B.
  EXPECT_EQ(plan_with(m, lagged).peak_bytes, 6144);
  EXPECT_EQ(plan_with(m, late).peak_bytes, 7168);
}

// Adafactor-like: the gradient g1 is read by a small reduction (its row
// statistics s1) and by the update n1, both tails: s1 runs right after g1,
// which leaves n1 the last reader of g1, and n1 follows.
TEST(MemorySchedule, TailChainFollowsItsGradient) {
  Module m = parse_hlo(R"(HloModule m
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %e (w1: f32[16,16], x: f32[16,16]) -> (f32[16,16], f32[16,16], f32[16]) {
  %w1 = f32[16,16] parameter(0), metadata={op_name="param/w1"}
  %x = f32[16,16] parameter(1), metadata={op_name="input/x"}
  %zero = f32[] constant(0)
  %g1 = f32[16,16] multiply(%x, %w1), metadata={op_name="bwd/g1"}
  %a = f32[16,16] exponential(%x), metadata={op_name="bwd/a"}
  %b = f32[16,16] tanh(%a), metadata={op_name="bwd/b"}
  %s1 = f32[16] reduce(%g1, %zero), dimensions={1}, to_apply=%sum, metadata={op_name="opt/w1"}
  %n1 = f32[16,16] subtract(%w1, %g1), metadata={op_name="opt/w1"}
  ROOT %r = (f32[16,16], f32[16,16], f32[16]) tuple(%b, %n1, %s1)
})");
  const Computation& c = m.entry();
  std::vector<InstrId> pulled = schedule_computation(c, FusionPlan{}, kOnlyRootReadersAreTails);
  expect_topological_permutation(c, pulled);
  EXPECT_EQ(names_in(c, pulled), (Names{"w1", "x", "zero", "g1", "s1", "n1", "a", "b", "r"}));
  // Ids: w1 x zero g1 a b s1 n1 r. s1 and n1 become ready after g1: both
  // key (3,1), ahead of a (4,0); s1 first by position. Not memory-aware:
  // the original order.
  std::vector<InstrId> strict =
      schedule_computation(c, FusionPlan{}, ScheduleOptions{.memory_aware = false});
  EXPECT_EQ(strict, id_order(c));
  // Peaks. Live throughout: w1, x, b, n1 (1024 B each), s1 64 B = 4160 B
  // (zero is 4 B).
  // Original order: zero [2,6], g1 [3,7], a [4,5]: at a zero + g1 + a =
  // 2052 -> 6212 B. Pulled (w1 x zero g1 s1 n1 a b): zero [2,4], g1 [3,5],
  // a [6,7]: at g1 zero + g1 = 1028 -> 5188 B.
  EXPECT_EQ(plan_with(m, strict).peak_bytes, 6212);
  EXPECT_EQ(plan_with(m, pulled).peak_bytes, 5188);
}

// Gradient contributions c1, c2 summed at the end (s), as autodiff emits
// the sum of a value's contributions: s frees two buffers for one, so it
// runs right after c2 instead. c's are f32[256] (1024 B), the d-chain
// f32[512] (2048 B).
TEST(MemorySchedule, AccumulatingAddRunsEarly) {
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (x: f32[256]) -> f32[256] {
  %x = f32[256] parameter(0)
  %c1 = f32[256] exponential(%x)
  %d1 = f32[512] concatenate(%x, %x), dimensions={0}
  %c2 = f32[256] tanh(%x)
  %d2 = f32[512] negate(%d1)
  %d3 = f32[512] negate(%d2)
  %d4 = f32[512] negate(%d3)
  %d4s = f32[256] slice(%d4), slice={[0:256]}
  %s = f32[256] add(%c1, %c2)
  %t = f32[256] multiply(%s, %d4s)
  ROOT %r = f32[256] negate(%t)
})");
  const Computation& c = m.entry();
  std::vector<InstrId> order = schedule_computation(c, FusionPlan{}, kOnlyRootReadersAreTails);
  expect_topological_permutation(c, order);
  // s: key right after c2, (3,1), ahead of d2 (4,0). d4s (frees 2048 B for
  // 1024 B) and t are early too, but their operands come last anyway.
  EXPECT_EQ(names_in(c, order),
            (Names{"x", "c1", "d1", "c2", "s", "d2", "d3", "d4", "d4s", "t", "r"}));
  // Base: x and the output r, 2048 B. Id order: c1 [1,8], d1 [2,4], c2
  // [3,8], d2 [4,5], d3 [5,6], d4 [6,7], d4s [7,9], s [8,9]: at d2
  // c1 + d1 + c2 + d2 = 6144 -> 8192 B. Memory-aware: c1 [1,4], d1 [2,5],
  // c2 [3,4], s [4,9], d2 [5,6], ...: at s c1 + d1 + c2 + s = 5120, after it
  // s + two of the d-chain = 5120 -> 7168 B.
  MemoryPlan before = plan_with(m, id_order(c));
  EXPECT_EQ(before.peak_bytes, 8192);
  EXPECT_EQ(before.peak_at, id_of(c, "d2"));
  MemoryPlan after = plan_with(m, order);
  EXPECT_EQ(after.peak_bytes, 7168);
  EXPECT_EQ(after.peak_at, id_of(c, "s"));
}

// A tail has at most 1/16 of the computation's units depending on it: in
// a graph of 10 units that is 0, whatever tail_size_limit says, so the
// default options schedule like kOnlyRootReadersAreTails, and the
// collective still starts right after g1.
TEST(MemorySchedule, SmallGraphsHaveOnlyRootReadersAsTails) {
  Module m = parse_hlo(kReducedGradient);
  const Computation& c = m.entry();
  std::vector<InstrId> by_default = schedule_computation(c, FusionPlan{});
  expect_topological_permutation(c, by_default);
  EXPECT_EQ(by_default, schedule_computation(c, FusionPlan{}, kOnlyRootReadersAreTails));
  EXPECT_EQ(names_in(c, by_default),
            (Names{"w1", "x", "g1", "ar", "c1", "c2", "c3", "c4", "n1", "r"}));
}

// The update reads a learning rate built from constants (lr, broadcast as
// lrb) that the training step emits late, at the optimizer: constant-only
// units keep their place unless an early unit needs them, then they run
// right away (pulled) instead of holding the update back.
TEST(MemorySchedule, ConstantOperandsArePulledForwardWithTheUpdate) {
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (w1: f32[256], x: f32[256]) -> (f32[256], f32[256]) {
  %w1 = f32[256] parameter(0), metadata={op_name="param/w1"}
  %x = f32[256] parameter(1), metadata={op_name="input/x"}
  %g1 = f32[256] multiply(%x, %w1), metadata={op_name="bwd/g1"}
  %c1 = f32[256] exponential(%x), metadata={op_name="bwd/c1"}
  %c2 = f32[256] negate(%c1), metadata={op_name="bwd/c2"}
  %c3 = f32[256] tanh(%c2), metadata={op_name="bwd/c3"}
  %c4 = f32[256] exponential(%c3), metadata={op_name="bwd/c4"}
  %lr = f32[] constant(0.1), metadata={op_name="opt/w1"}
  %lrb = f32[256] broadcast(%lr), dimensions={}, metadata={op_name="opt/w1"}
  %n1 = f32[256] multiply(%g1, %lrb), metadata={op_name="opt/w1"}
  ROOT %r = (f32[256], f32[256]) tuple(%c4, %n1)
})");
  const Computation& c = m.entry();
  // n1 (a tail reading g1, which only it reads) waits only for lrb once g1
  // has run: lr and lrb are pulled, then n1 follows.
  std::vector<InstrId> order = schedule_computation(c, FusionPlan{}, kOnlyRootReadersAreTails);
  expect_topological_permutation(c, order);
  EXPECT_EQ(names_in(c, order),
            (Names{"w1", "x", "g1", "lr", "lrb", "n1", "c1", "c2", "c3", "c4", "r"}));
  // Peaks. Live throughout: w1, x, c4, n1 = 4096 B. lrb is an expansion of
  // lr (memory_plan.h): n1 reads lr (4 B). Id order: g1 [2,9], c1 [3,4],
  // c2 [4,5], c3 [5,6]: at c2 g1 + c1 + c2 = 3072 -> 7168 B. Memory-aware:
  // g1 [2,5], lr [3,5], c1 [6,7], c2 [7,8], c3 [8,9]: at most 2048 (at c2)
  // -> 6144 B.
  EXPECT_EQ(plan_with(m, id_order(c)).peak_bytes, 7168);
  EXPECT_EQ(plan_with(m, order).peak_bytes, 6144);
}

}  // namespace
}  // namespace podsim::compiler
