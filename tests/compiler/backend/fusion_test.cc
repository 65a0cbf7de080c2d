// plan_fusion on small hand graphs: which ops fuse (loop, output, input
// fusion, cheap duplication) and which never do.
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/backend/fusion.h"
#include "tests/compiler/backend/test_util.h"

namespace podsim::compiler {
namespace {

using pipeline_test::id_of;
using pipeline_test::member_names;
using Names = std::vector<std::string>;

constexpr const char* kAddComputation = R"(
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
)";

TEST(Fusion, ElementwiseChainIsOneLoopFusion) {
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (p0: f32[8], p1: f32[8]) -> bf16[8] {
  %p0 = f32[8] parameter(0)
  %p1 = f32[8] parameter(1)
  %a = f32[8] add(%p0, %p1)
  %c = bf16[8] convert(%a)
  %e = bf16[8] exponential(%c)
  ROOT %n = bf16[8] negate(%e)
})");
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(member_names(c, plan.groups[0]), (Names{"a", "c", "e", "n"}));  // root n last
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "p0"))], -1);        // parameters never
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "a"))], 0);
}

TEST(Fusion, ValueWithAnOutsideUserIsNotFused) {
  // a feeds the chain and an all-reduce: it must be materialized, so the
  // group is only {e, n}; the all-reduce is never fused.
  Module m = parse_hlo(std::string("HloModule m\n") + kAddComputation + R"(
ENTRY %e (p0: f32[8], p1: f32[8]) -> (f32[8], f32[8]) {
  %p0 = f32[8] parameter(0)
  %p1 = f32[8] parameter(1)
  %a = f32[8] add(%p0, %p1)
  %e = f32[8] exponential(%a)
  %n = f32[8] negate(%e)
  %ar = f32[8] all-reduce(%a), replica_groups={}, to_apply=%sum
  ROOT %t = (f32[8], f32[8]) tuple(%n, %ar)
})");
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(member_names(c, plan.groups[0]), (Names{"e", "n"}));
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "a"))], -1);
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "ar"))], -1);
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "t"))], -1);
}

TEST(Fusion, ProducerUsedTwiceInsideTheGroupIsFused) {
  // a has two users (e and m), both end up in m's group, so a joins too.
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (p0: f32[8]) -> f32[8] {
  %p0 = f32[8] parameter(0)
  %a = f32[8] negate(%p0)
  %e = f32[8] exponential(%a)
  ROOT %m = f32[8] multiply(%a, %e)
})");
  FusionPlan plan = plan_fusion(m.entry());
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(member_names(m.entry(), plan.groups[0]), (Names{"a", "e", "m"}));
}

TEST(Fusion, DotOutputFusionWithBiasAndActivation) {
  // dot -> add(bias broadcast) -> tanh: output fusion rooted at tanh, the
  // bias broadcast (single user) fused as a producer; dot operands are
  // parameters and stay outside.
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (x: f32[2,4], w: f32[4,3], bias: f32[3]) -> f32[2,3] {
  %x = f32[2,4] parameter(0)
  %w = f32[4,3] parameter(1)
  %bias = f32[3] parameter(2)
  %d = f32[2,3] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %b = f32[2,3] broadcast(%bias), dimensions={1}
  %s = f32[2,3] add(%d, %b)
  ROOT %t = f32[2,3] tanh(%s)
})");
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(member_names(c, plan.groups[0]), (Names{"d", "b", "s", "t"}));
}

TEST(Fusion, TwoDotChainsMeetingInOneAddShareNoOp) {
  // s2 = add(add(acc, d1), d2): d1's chain takes s1 and s2 (each has one
  // user); d2's chain stops before s2, which is already in d1's group. Every
  // op is in at most one group (an op in two groups made the schedule's unit
  // graph cyclic), and d2 stays a kernel of its own.
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (x: f32[2,4], w: f32[4,3], v: f32[4,3], acc: f32[2,3]) -> f32[2,3] {
  %x = f32[2,4] parameter(0)
  %w = f32[4,3] parameter(1)
  %v = f32[4,3] parameter(2)
  %acc = f32[2,3] parameter(3)
  %d1 = f32[2,3] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %d2 = f32[2,3] dot(%x, %v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %s1 = f32[2,3] add(%acc, %d1)
  ROOT %s2 = f32[2,3] add(%s1, %d2)
})");
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(member_names(c, plan.groups[0]), (Names{"d1", "s1", "s2"}));
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "d2"))], -1);
  const std::vector<bool> twice = duplicated_members(plan, c.size());
  EXPECT_EQ(std::count(twice.begin(), twice.end(), true), 0);
}

TEST(Fusion, DotWithTwoUsersHasNoOutputFusion) {
  // d feeds two consumers: no output fusion; each consumer chain fuses on
  // its own and the dot stays a kernel of its own.
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (x: f32[2,4], w: f32[4,3]) -> (f32[2,3], f32[2,3]) {
  %x = f32[2,4] parameter(0)
  %w = f32[4,3] parameter(1)
  %d = f32[2,3] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %t = f32[2,3] tanh(%d)
  %u = f32[2,3] exponential(%d)
  ROOT %r = (f32[2,3], f32[2,3]) tuple(%t, %u)
})");
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  EXPECT_TRUE(plan.groups.empty());
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "d"))], -1);
}

TEST(Fusion, ReduceAbsorbsItsElementwiseInput) {
  // sum(p * p): the multiply and the init constant fuse into the reduce.
  Module m = parse_hlo(std::string("HloModule m\n") + kAddComputation + R"(
ENTRY %e (p: f32[4,8]) -> f32[4] {
  %p = f32[4,8] parameter(0)
  %sq = f32[4,8] multiply(%p, %p)
  %zero = f32[] constant(0)
  ROOT %r = f32[4] reduce(%sq, %zero), dimensions={1}, to_apply=%sum
})");
  FusionPlan plan = plan_fusion(m.entry());
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(member_names(m.entry(), plan.groups[0]), (Names{"sq", "zero", "r"}));
}

TEST(Fusion, CollectiveBreaksAChain) {
  // exp -> all-reduce -> negate: the collective is neither fused nor a
  // consumer; exp and negate each stand alone (nothing to fuse with).
  Module m = parse_hlo(std::string("HloModule m\n") + kAddComputation + R"(
ENTRY %e (p: f32[8]) -> f32[8] {
  %p = f32[8] parameter(0)
  %x = f32[8] exponential(%p)
  %ar = f32[8] all-reduce(%x), replica_groups={}, to_apply=%sum
  ROOT %n = f32[8] negate(%ar)
})");
  FusionPlan plan = plan_fusion(m.entry());
  EXPECT_TRUE(plan.groups.empty());
  for (int32_t g : plan.group_of) EXPECT_EQ(g, -1);
}

TEST(Fusion, CollectiveReaderTakesNoIndependentWork) {
  // v = add(ar, broadcast(1)) reads the all-reduce directly: it takes only
  // the cheap broadcast (duplicated, with its constant) and is fused into
  // nothing. u = add(v, t) reads v, not a collective, so the rule stops
  // there: u absorbs the independent chain e -> t, and n absorbs u (a
  // known limit: that kernel still waits for the collective through v).
  Module m = parse_hlo(std::string("HloModule m\n") + kAddComputation + R"(
ENTRY %e (p: f32[8], w: f32[8]) -> f32[8] {
  %p = f32[8] parameter(0)
  %w = f32[8] parameter(1)
  %ar = f32[8] all-reduce(%w), replica_groups={}, to_apply=%sum
  %e = f32[8] exponential(%p)
  %t = f32[8] tanh(%e)
  %c = f32[] constant(1)
  %one = f32[8] broadcast(%c), dimensions={}
  %v = f32[8] add(%ar, %one)
  %u = f32[8] add(%v, %t)
  ROOT %n = f32[8] negate(%u)
})");
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  const int32_t reader = plan.group_of[static_cast<size_t>(id_of(c, "v"))];
  ASSERT_GE(reader, 0);
  EXPECT_EQ(member_names(c, plan.groups[static_cast<size_t>(reader)]), (Names{"c", "one", "v"}));
  const int32_t tail = plan.group_of[static_cast<size_t>(id_of(c, "n"))];
  ASSERT_GE(tail, 0);
  EXPECT_NE(tail, reader);
  EXPECT_EQ(member_names(c, plan.groups[static_cast<size_t>(tail)]), (Names{"e", "t", "u", "n"}));
}

TEST(Fusion, CollectiveReadingDotTakesItsDynamicSliceButNotTheSliceInput) {
  // A windowed einsum's step: d reads the collective-permute, so it takes no
  // independent work, but the dynamic-slice ds is only d's operand read at
  // other addresses: it joins d's kernel (with its index constant z). ds
  // then absorbs only what a collective reader may: nb (a negate, real
  // work) stays out and, alone, is unfused.
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (big: bf16[4,64,128], i: s32[], w: bf16[128,128]) -> bf16[1,64,128] {
  %big = bf16[4,64,128] parameter(0)
  %i = s32[] parameter(1)
  %w = bf16[128,128] parameter(2)
  %cp = bf16[128,128] collective-permute(%w), source_target_pairs={{0,1},{1,0}}
  %nb = bf16[4,64,128] negate(%big)
  %z = s32[] constant(0)
  %ds = bf16[1,64,128] dynamic-slice(%nb, %i, %z, %z), dynamic_slice_sizes={1,64,128}
  ROOT %d = bf16[1,64,128] dot(%ds, %cp), lhs_contracting_dims={2}, rhs_contracting_dims={0}
})");
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  const int32_t g = plan.group_of[static_cast<size_t>(id_of(c, "d"))];
  ASSERT_GE(g, 0);
  EXPECT_EQ(member_names(c, plan.groups[static_cast<size_t>(g)]), (Names{"z", "ds", "d"}));
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "nb"))], -1);
}

TEST(Fusion, DotOutputFusionEndsInAnInPlaceDynamicUpdateSlice) {
  // d -> a -> u: the chain's value is u's update (operand 1), written in
  // place into buf, so u is the output fusion's root. The index constant z
  // stays outside (a dynamic-update-slice absorbs no producers).
  // d2 is u2's buffer (operand 0), not its update: no in-place root, and
  // d2 with its single non-elementwise user forms no output fusion.
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (buf: bf16[4,64,128], x: bf16[1,64,32], y: bf16[32,128], i: s32[], v: bf16[1,64,128]) -> (bf16[4,64,128], bf16[1,64,128]) {
  %buf = bf16[4,64,128] parameter(0)
  %x = bf16[1,64,32] parameter(1)
  %y = bf16[32,128] parameter(2)
  %i = s32[] parameter(3)
  %v = bf16[1,64,128] parameter(4)
  %z = s32[] constant(0)
  %d = bf16[1,64,128] dot(%x, %y), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  %a = bf16[1,64,128] negate(%d)
  %u = bf16[4,64,128] dynamic-update-slice(%buf, %a, %i, %z, %z)
  %d2 = bf16[1,64,128] dot(%x, %y), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  %u2 = bf16[1,64,128] dynamic-update-slice(%d2, %v, %z, %z, %z)
  ROOT %t = (bf16[4,64,128], bf16[1,64,128]) tuple(%u, %u2)
})");
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  const int32_t g = plan.group_of[static_cast<size_t>(id_of(c, "u"))];
  ASSERT_GE(g, 0);
  EXPECT_EQ(member_names(c, plan.groups[static_cast<size_t>(g)]), (Names{"d", "a", "u"}));
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "d2"))], -1);
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "u2"))], -1);
}

TEST(Fusion, CheapBroadcastIsDuplicatedIntoEveryUsingGroup) {
  // half is used by two separate chains (each with an outside-visible root
  // in the tuple): a broadcast is cheap to recompute, so it is a member of
  // both groups; group_of names the group of its first user (x1's).
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (p: f32[8], q: f32[8]) -> (f32[8], f32[8]) {
  %p = f32[8] parameter(0)
  %q = f32[8] parameter(1)
  %c = f32[] constant(0.5)
  %half = f32[8] broadcast(%c), dimensions={}
  %x1 = f32[8] multiply(%p, %half)
  %y1 = f32[8] exponential(%x1)
  %x2 = f32[8] multiply(%q, %half)
  %y2 = f32[8] tanh(%x2)
  ROOT %t = (f32[8], f32[8]) tuple(%y1, %y2)
})");
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  ASSERT_EQ(plan.groups.size(), 2u);
  const int32_t g1 = plan.group_of[static_cast<size_t>(id_of(c, "y1"))];
  const int32_t g2 = plan.group_of[static_cast<size_t>(id_of(c, "y2"))];
  EXPECT_EQ(member_names(c, plan.groups[static_cast<size_t>(g1)]),
            (Names{"c", "half", "x1", "y1"}));
  EXPECT_EQ(member_names(c, plan.groups[static_cast<size_t>(g2)]),
            (Names{"c", "half", "x2", "y2"}));
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "half"))], g1);
  std::vector<bool> dup = duplicated_members(plan, c.size());
  EXPECT_TRUE(dup[static_cast<size_t>(id_of(c, "half"))]);
  EXPECT_TRUE(dup[static_cast<size_t>(id_of(c, "c"))]);
  EXPECT_FALSE(dup[static_cast<size_t>(id_of(c, "x1"))]);
}

TEST(Fusion, BroadcastWithAnUnfusedUserIsNotDuplicated) {
  // The same broadcast also feeds an all-reduce: it must be materialized,
  // so it is fused nowhere (one buffer serves every user).
  Module m = parse_hlo(std::string("HloModule m\n") + kAddComputation + R"(
ENTRY %e (p: f32[8]) -> (f32[8], f32[8]) {
  %p = f32[8] parameter(0)
  %c = f32[] constant(0.5)
  %half = f32[8] broadcast(%c), dimensions={}
  %x1 = f32[8] multiply(%p, %half)
  %y1 = f32[8] exponential(%x1)
  %ar = f32[8] all-reduce(%half), replica_groups={}, to_apply=%sum
  ROOT %t = (f32[8], f32[8]) tuple(%y1, %ar)
})");
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  ASSERT_EQ(plan.groups.size(), 1u);  // {x1, y1}; a broadcast is no kernel root
  EXPECT_EQ(member_names(c, plan.groups[0]), (Names{"x1", "y1"}));
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "half"))], -1);
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "c"))], -1);
}

TEST(Fusion, WhileAndTuplesAreNeverFused) {
  Module m = parse_hlo_file(std::string(PODSIM_SOURCE_DIR) + "/tests/fixtures/hlo/while_loop.hlo");
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  EXPECT_TRUE(plan.groups.empty());
  // The body: twos = broadcast(two) and acc.next = multiply(acc, twos) fuse;
  // the counter add(i, one) fuses its constant; the tuple root does not.
  const Computation& body = m.computation(m.find_computation("body"));
  FusionPlan body_plan = plan_fusion(body);
  ASSERT_EQ(body_plan.groups.size(), 2u);
  EXPECT_EQ(member_names(body, body_plan.groups[0]), (Names{"two", "twos", "acc.next"}));
  EXPECT_EQ(member_names(body, body_plan.groups[1]), (Names{"one", "next"}));
  EXPECT_EQ(body_plan.group_of[static_cast<size_t>(id_of(body, "out"))], -1);
}

}  // namespace
}  // namespace podsim::compiler
