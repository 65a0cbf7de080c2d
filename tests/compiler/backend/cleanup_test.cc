// remove_markers_and_dead_code on a hand graph.
#include <gtest/gtest.h>

#include "compiler/backend/cleanup.h"
#include "compiler/ir/verifier.h"
#include "tests/compiler/backend/test_util.h"

namespace podsim::compiler {
namespace {

using pipeline_test::id_of;

TEST(Cleanup, ForwardsMarkersAndDropsDeadValues) {
  // m1 is a marker on e; n reads m1 -> reads e after cleanup. d and its
  // all-reduce reach no root: removed. The unused parameter q stays.
  Module m = parse_hlo(R"(HloModule m
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %e (p: f32[8], q: f32[8]) -> f32[8] {
  %p = f32[8] parameter(0)
  %q = f32[8] parameter(1)
  %e = f32[8] exponential(%p)
  %m1 = f32[8] custom-call(%e), custom_call_target="Sharding", sharding={replicated}
  %d = f32[8] negate(%p)
  %ar = f32[8] all-reduce(%d), replica_groups={}, to_apply=%sum
  ROOT %n = f32[8] negate(%m1)
})");
  CleanupStats stats = remove_markers_and_dead_code(m);
  EXPECT_EQ(stats.markers_removed, 1);
  EXPECT_EQ(stats.dead_instructions_removed, 2);
  const Computation& c = m.entry();
  ASSERT_EQ(c.size(), 4);  // p, q, e, n
  EXPECT_EQ(c.find("d"), kNoId);
  EXPECT_EQ(c.find("m1"), kNoId);
  EXPECT_EQ(c.root_instr().name, "n");
  EXPECT_EQ(c.root_instr().operand(0), id_of(c, "e"));
  verify_module(m);  // operands renumbered consistently
  // The reducer is no program: untouched.
  EXPECT_EQ(m.computation(m.find_computation("sum")).size(), 3);
}

// remove_stop_gradients forwards the barrier to its operand and leaves every
// other instruction, dead ones and "Sharding" markers included (it runs
// before propagation, which needs the markers).
TEST(Cleanup, StopGradientsAreForwardedBeforePropagation) {
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (p: f32[8]) -> f32[8] {
  %p = f32[8] parameter(0)
  %s = f32[8] custom-call(%p), custom_call_target="StopGradient"
  %m1 = f32[8] custom-call(%s), custom_call_target="Sharding", sharding={replicated}
  %d = f32[8] negate(%p)
  ROOT %n = f32[8] add(%m1, %s)
})");
  EXPECT_EQ(remove_stop_gradients(m), 1);
  const Computation& c = m.entry();
  EXPECT_EQ(c.find("s"), kNoId);
  ASSERT_NE(c.find("m1"), kNoId);
  ASSERT_NE(c.find("d"), kNoId);
  EXPECT_EQ(c.instr(id_of(c, "m1")).operand(0), id_of(c, "p"));
  EXPECT_EQ(c.root_instr().operand(1), id_of(c, "p"));
  verify_module(m);
}

}  // namespace
}  // namespace podsim::compiler
