// Scheduling with plan_fusion's duplicated members and multi-output kernels
// (schedule.h): a duplicated cheap op is folded into the units of the
// groups that recompute it (they read its inputs), and a multi-output
// kernel allocates its extra output as well as its root. Plans come from
// plan_fusion and are checked first; orders are derived by hand from the
// priority keys (schedule.cc). The graphs are tiny: tail_size_limit = 0
// makes the tails the units only the root reads.
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/backend/fusion.h"
#include "compiler/backend/schedule.h"
#include "tests/compiler/backend/test_util.h"

namespace podsim::compiler {
namespace {

using pipeline_test::expect_topological_permutation;
using pipeline_test::id_of;
using pipeline_test::member_names;
using pipeline_test::names_in;
using Names = std::vector<std::string>;

constexpr ScheduleOptions kOnlyRootReadersAreTails{.tail_size_limit = 0};

Names group_of_named(const Computation& c, const FusionPlan& plan, const char* name) {
  const int32_t g = plan.group_of[static_cast<size_t>(id_of(c, name))];
  EXPECT_GE(g, 0) << name;
  return g < 0 ? Names{} : member_names(c, plan.groups[static_cast<size_t>(g)]);
}

// Adafactor-like update of w1 (f32[16,16], 1024 B per value): the gradient
// g1 is squared (sq = g1 * g1, as many bytes as it reads) under the row and
// column statistics (two reduces), and the update n1 reads g1. The backward
// pass has more work after g1 (a, b).
// Ids: w1 0, x 1, zero 2, g1 3, a 4, b 5, sq 6, row 7, col 8, n1 9, r 10.
constexpr const char* kSquaredGradient = R"(HloModule m
%sum (p: f32[], q: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  %q = f32[] parameter(1)
  ROOT %s = f32[] add(%p, %q)
}
ENTRY %e (w1: f32[16,16], x: f32[16,16]) -> (f32[16,16], f32[16,16], f32[16], f32[16]) {
  %w1 = f32[16,16] parameter(0), metadata={op_name="param/w1"}
  %x = f32[16,16] parameter(1), metadata={op_name="input/x"}
  %zero = f32[] constant(0), metadata={op_name="opt/w1"}
  %g1 = f32[16,16] multiply(%x, %w1), metadata={op_name="bwd/g1"}
  %a = f32[16,16] exponential(%x), metadata={op_name="bwd/a"}
  %b = f32[16,16] tanh(%a), metadata={op_name="bwd/b"}
  %sq = f32[16,16] multiply(%g1, %g1), metadata={op_name="opt/w1"}
  %row = f32[16] reduce(%sq, %zero), dimensions={1}, to_apply=%sum, metadata={op_name="opt/w1"}
  %col = f32[16] reduce(%sq, %zero), dimensions={0}, to_apply=%sum, metadata={op_name="opt/w1"}
  %n1 = f32[16,16] subtract(%w1, %g1), metadata={op_name="opt/w1"}
  ROOT %r = (f32[16,16], f32[16,16], f32[16], f32[16]) tuple(%b, %n1, %row, %col)
})";

TEST(ScheduleDuplication, DuplicatedSquareKeepsTheUpdateRightAfterItsGradient) {
  Module m = parse_hlo(kSquaredGradient);
  const Computation& c = m.entry();
  // sq reads g1 once (1024 B, its own bytes) and both readers fuse it: it
  // is recomputed in each reduce's kernel, with the constant zero.
  FusionPlan plan = plan_fusion(c);
  EXPECT_EQ(group_of_named(c, plan, "row"), (Names{"zero", "sq", "row"}));
  EXPECT_EQ(group_of_named(c, plan, "col"), (Names{"zero", "sq", "col"}));
  EXPECT_EQ(group_of_named(c, plan, "b"), (Names{"a", "b"}));
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "g1"))], -1);
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "n1"))], -1);
  ASSERT_EQ(plan.groups.size(), 3u);

  std::vector<InstrId> order = schedule_computation(c, plan, kOnlyRootReadersAreTails);
  expect_topological_permutation(c, order);
  // Units (keys (position, 0)): w1 0, x 1, g1 3, {a, b} 5, {row} 7 and
  // {col} 8 (each recomputing zero and sq: both read g1), n1 9, r 10.
  // Tails (only the root reads them): {a, b}, {row}, {col}, n1. g1 is read
  // by tails only, so each tail reading it runs right after it: {row},
  // {col} and n1 all get key (3,1), ahead of {a, b} at (5,0), and follow
  // each other by position. {a, b} reads only the parameter x: it keeps
  // its place. zero and sq are emitted once, with {row} (ids in order);
  // {col} then emits col alone.
  EXPECT_EQ(names_in(c, order),
            (Names{"w1", "x", "g1", "zero", "sq", "row", "col", "n1", "a", "b", "r"}));
  // Had sq (and zero) been units of their own (writing nothing), the
  // reduces would read only those zero-byte units: not a value only tails
  // read, so they, and through them g1's last reader, would wait for their
  // place after a and b. Without memory awareness that is the order.
  std::vector<InstrId> strict =
      schedule_computation(c, plan, ScheduleOptions{.memory_aware = false});
  expect_topological_permutation(c, strict);
  EXPECT_EQ(names_in(c, strict),
            (Names{"w1", "x", "g1", "a", "b", "zero", "sq", "row", "col", "n1", "r"}));
}

// The reduce z of e = exp(p) takes e's loop kernel in (multi-output
// fusion): its kernel {e, zz, z} writes e (1024 B, read later by y) and z
// (64 B), and is the last reader of p (1024 B, a reduce's result). It frees
// 1024 B for 1088: not a unit that reduces memory, so it keeps its place
// after the independent c1, c2. (Counting only its root, 64 B, it would
// have run right after p.)
// Ids: x 0, w 1, zp 2, p 3, c1 4, c2 5, e 6, zz 7, z 8, y 9, r 10.
TEST(ScheduleDuplication, MultiOutputKernelAllocatesItsExtraOutput) {
  Module m = parse_hlo(R"(HloModule m
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %e (x: f32[16,16,4], w: f32[16,16]) -> (f32[16,16], f32[16], f32[16,16]) {
  %x = f32[16,16,4] parameter(0)
  %w = f32[16,16] parameter(1)
  %zp = f32[] constant(0)
  %p = f32[16,16] reduce(%x, %zp), dimensions={2}, to_apply=%sum
  %c1 = f32[16,16] exponential(%w)
  %c2 = f32[16,16] exponential(%c1)
  %e = f32[16,16] exponential(%p)
  %zz = f32[] constant(0)
  %z = f32[16] reduce(%e, %zz), dimensions={1}, to_apply=%sum
  %y = f32[16,16] tanh(%e)
  ROOT %r = (f32[16,16], f32[16], f32[16,16]) tuple(%c2, %z, %y)
})");
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  EXPECT_EQ(group_of_named(c, plan, "z"), (Names{"e", "zz", "z"}));
  EXPECT_EQ(group_of_named(c, plan, "p"), (Names{"zp", "p"}));
  EXPECT_EQ(group_of_named(c, plan, "c2"), (Names{"c1", "c2"}));
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "y"))], -1);
  const std::vector<bool> twice = duplicated_members(plan, c.size());
  EXPECT_EQ(std::count(twice.begin(), twice.end(), true), 0);

  std::vector<InstrId> order = schedule_computation(c, plan, kOnlyRootReadersAreTails);
  expect_topological_permutation(c, order);
  // Units: x 0, w 1, {zp, p} 3, {c1, c2} 5, {e, zz, z} 8, y 9, r 10.
  // Tails: {c1, c2} (it reads only the parameter w: keeps its place) and
  // y. {e, zz, z} is no tail (y reads it) and frees 1024 B (p, of which it
  // is the only reader) for 1088 B: key (8,0), after {c1, c2} at (5,0).
  // y reads e, which only y and the root read: right after it, (8,1).
  EXPECT_EQ(names_in(c, order), (Names{"x", "w", "zp", "p", "c1", "c2", "e", "zz", "z", "y", "r"}));
}

}  // namespace
}  // namespace podsim::compiler
